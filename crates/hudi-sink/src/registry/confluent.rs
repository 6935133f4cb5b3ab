//! The Confluent Schema Registry REST client: `GET /schemas/ids/{id}`, over the HTTP and TLS stack the AWS
//! SDK already brings (hyper, rustls with the system's roots).
//!
//! The base URL comes from Hudi's `hoodie.streamer.schemaprovider.registry.url`. HoodieStreamer's value is
//! usually a full subject URL (`https://host/subjects/orders-value/versions/latest`): everything from
//! `/subjects/` on is dropped, since the sink asks by id. Basic auth comes from the URL's user info
//! (`https://key:secret@host`, percent-encoded) or from `hudi.sink.schema.registry.basic.auth.user.info`
//! (`key:secret`).

use std::time::Duration;

use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::{Fetched, RegistryError, SchemaId, SchemaSource};

/// Largest registry answer read (a schema is a few kB; this bounds a broken or hostile server).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A Confluent Schema Registry reachable at a base URL.
pub struct ConfluentRegistry {
    base: String,
    authorization: Option<String>,
    timeout: Duration,
    client: Client<Https, Empty<Bytes>>,
}

impl std::fmt::Debug for ConfluentRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The authorization header is a secret.
        f.debug_struct("ConfluentRegistry")
            .field("base", &self.base)
            .field("basic_auth", &self.authorization.is_some())
            .finish()
    }
}

/// The base URL and basic-auth user info of a registry URL (see the module doc).
pub fn parse_url(url: &str) -> Result<(String, Option<String>), RegistryError> {
    let bad = |why: &str| RegistryError::Config(format!("registry URL {url:?}: {why}"));
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("expected http:// or https://"))?;
    if scheme != "http" && scheme != "https" {
        return Err(bad("expected http:// or https://"));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (user_info, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (
            Some(percent_decode(user).ok_or_else(|| bad("bad %-escape"))?),
            host,
        ),
        None => (None, authority),
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let path = match path.find("/subjects/") {
        Some(i) => &path[..i],
        None => path,
    };
    let path = path.trim_end_matches('/');
    Ok((format!("{scheme}://{host}{path}"), user_info))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl ConfluentRegistry {
    /// A client for `url` (see [`parse_url`]); `user_info` (`key:secret`) wins over the URL's.
    pub fn new(
        url: &str,
        user_info: Option<&str>,
        timeout: Duration,
    ) -> Result<Self, RegistryError> {
        let (base, url_user) = parse_url(url)?;
        let authorization = user_info
            .map(str::to_string)
            .or(url_user)
            .map(|u| format!("Basic {}", STANDARD.encode(u)));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| RegistryError::Config(format!("no TLS root certificates: {e}")))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(Self {
            base,
            authorization,
            timeout,
            client,
        })
    }

    /// The URL asked for `id`.
    pub fn schema_url(&self, id: i32) -> String {
        format!("{}/schemas/ids/{id}", self.base)
    }

    async fn get(&self, id: i32) -> Result<Option<Fetched>, String> {
        let url = self.schema_url(id);
        let mut request = hyper::Request::get(&url).header(
            "accept",
            "application/vnd.schemaregistry.v1+json, application/json",
        );
        if let Some(auth) = &self.authorization {
            request = request.header("authorization", auth);
        }
        let request = request
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("GET {url}: {e}"))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| format!("GET {url}: reading the answer: {e}"))?
            .to_bytes();
        if status == hyper::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let text: String = text.chars().take(200).collect();
            return Err(format!("GET {url}: HTTP {status}: {text}"));
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Answer {
            schema: String,
            schema_type: Option<String>,
        }
        let answer: Answer = serde_json::from_slice(&body)
            .map_err(|e| format!("GET {url}: the answer is not a schema object: {e}"))?;
        Ok(Some(Fetched {
            text: answer.schema,
            // Older registries and Avro answers omit the type.
            format: answer.schema_type.unwrap_or_else(|| "AVRO".to_string()),
        }))
    }
}

#[async_trait]
impl SchemaSource for ConfluentRegistry {
    async fn fetch(&self, id: SchemaId) -> Result<Option<Fetched>, String> {
        let SchemaId::Confluent(n) = id else {
            return Ok(None);
        };
        // One quick second try: a registry behind a load balancer may drop one idle connection.
        let mut last = String::new();
        for _ in 0..2 {
            match tokio::time::timeout(self.timeout, self.get(n)).await {
                Ok(Ok(found)) => return Ok(found),
                Ok(Err(e)) => last = e,
                Err(_) => {
                    last = format!(
                        "GET {}: no answer within {:?}",
                        self.schema_url(n),
                        self.timeout
                    )
                }
            }
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_the_subject_path_and_keep_user_info() {
        let ok = |u| parse_url(u).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            ok("https://sr.example.com/subjects/orders-value/versions/latest"),
            ("https://sr.example.com".to_string(), None)
        );
        assert_eq!(
            ok("http://k%40y:s%3Acret@127.0.0.1:8081/registry/"),
            (
                "http://127.0.0.1:8081/registry".to_string(),
                Some("k@y:s:cret".to_string())
            )
        );
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("https:///path").is_err());
        assert!(parse_url("https://u:%zz@host").is_err());
    }
}
