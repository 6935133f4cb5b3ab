//! `hoodie.parquet.compression.codec`: the Parquet codec of base files.

use std::fmt;
use std::str::FromStr;

use parquet::basic::{Compression, GzipLevel, ZstdLevel};

/// Codecs this writer can produce and every engine reads. Hudi 0.14's default is GZIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompressionCodec {
    Uncompressed,
    Snappy,
    #[default]
    Gzip,
    Zstd,
}

impl CompressionCodec {
    /// The value as Hudi spells it in `hoodie.parquet.compression.codec`.
    pub fn as_str(&self) -> &'static str {
        match self {
            CompressionCodec::Uncompressed => "uncompressed",
            CompressionCodec::Snappy => "snappy",
            CompressionCodec::Gzip => "gzip",
            CompressionCodec::Zstd => "zstd",
        }
    }

    /// The parquet-rs compression setting.
    pub fn to_parquet(self) -> Compression {
        match self {
            CompressionCodec::Uncompressed => Compression::UNCOMPRESSED,
            CompressionCodec::Snappy => Compression::SNAPPY,
            CompressionCodec::Gzip => Compression::GZIP(GzipLevel::default()),
            CompressionCodec::Zstd => Compression::ZSTD(ZstdLevel::default()),
        }
    }
}

impl fmt::Display for CompressionCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The codec name was not one this writer supports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported hoodie.parquet.compression.codec {0:?}: expected uncompressed, snappy, gzip or zstd")]
pub struct UnknownCodec(pub String);

impl FromStr for CompressionCodec {
    type Err = UnknownCodec;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "uncompressed" | "none" => Ok(CompressionCodec::Uncompressed),
            "snappy" => Ok(CompressionCodec::Snappy),
            "gzip" => Ok(CompressionCodec::Gzip),
            "zstd" => Ok(CompressionCodec::Zstd),
            _ => Err(UnknownCodec(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hudi_spellings() {
        assert_eq!(
            "GZIP".parse::<CompressionCodec>(),
            Ok(CompressionCodec::Gzip)
        );
        assert_eq!(
            "snappy".parse::<CompressionCodec>(),
            Ok(CompressionCodec::Snappy)
        );
        assert_eq!(
            "zstd".parse::<CompressionCodec>(),
            Ok(CompressionCodec::Zstd)
        );
        assert!("lzo".parse::<CompressionCodec>().is_err());
    }
}
