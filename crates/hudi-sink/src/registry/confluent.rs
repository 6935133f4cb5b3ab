//! The Confluent Schema Registry REST client: `GET /schemas/ids/{id}`, over the HTTP and TLS stack the AWS
//! SDK already brings (hyper, rustls with the system's roots).
//!
//! The base URL comes from Hudi's `hoodie.streamer.schemaprovider.registry.url`. HoodieStreamer's value is
//! usually a full subject URL (`https://host/subjects/orders-value/versions/latest`): Avro values are
//! asked for by id under the base URL (everything from `/subjects/` on dropped), and JSON values take the
//! subject URL's answer as their schema (`GET` as configured, see `latest.rs`). Basic auth comes from the URL's user info
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
    /// The configured URL without its user info, when it names a subject (`…/subjects/…`).
    subject: Option<String>,
    authorization: Option<String>,
    timeout: Duration,
    client: Client<Https, Empty<Bytes>>,
}

impl std::fmt::Debug for ConfluentRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The authorization header is a secret.
        f.debug_struct("ConfluentRegistry")
            .field("base", &self.base)
            .field("subject", &self.subject)
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

/// `url` without its user info, when it names a subject (`https://host/subjects/<subject>/versions/latest`).
pub fn subject_url(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = rest.split_at(rest.find('/')?);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    path.contains("/subjects/")
        .then(|| format!("{scheme}://{host}{}", path.trim_end_matches('/')))
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
        let subject = subject_url(url);
        let authorization = user_info
            .map(str::to_string)
            .or(url_user)
            .map(|u| format!("Basic {}", STANDARD.encode(u)));
        crate::aws_clients::install_crypto_provider();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| RegistryError::Config(format!("no TLS root certificates: {e}")))?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(Self {
            base,
            subject,
            authorization,
            timeout,
            client,
        })
    }

    /// The URL asked for `id`.
    pub fn schema_url(&self, id: i32) -> String {
        format!("{}/schemas/ids/{id}", self.base)
    }

    /// `GET url`: the schema object answered, `None` on 404.
    async fn get_answer(&self, url: &str) -> Result<Option<super::latest::LatestVersion>, String> {
        let mut request = hyper::Request::get(url).header(
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
            id: Option<i64>,
            version: Option<i64>,
        }
        let answer: Answer = serde_json::from_slice(&body)
            .map_err(|e| format!("GET {url}: the answer is not a schema object: {e}"))?;
        Ok(Some(super::latest::LatestVersion {
            id: answer.id,
            version: answer.version,
            fetched: Fetched {
                text: answer.schema,
                // Older registries and Avro answers omit the type.
                format: answer.schema_type.unwrap_or_else(|| "AVRO".to_string()),
            },
        }))
    }

    /// `get_answer` with the request deadline and one quick second try (a registry behind a load balancer
    /// may drop one idle connection).
    async fn get_with_retry(
        &self,
        url: &str,
    ) -> Result<Option<super::latest::LatestVersion>, String> {
        let mut last = String::new();
        for _ in 0..2 {
            match tokio::time::timeout(self.timeout, self.get_answer(url)).await {
                Ok(Ok(found)) => return Ok(found),
                Ok(Err(e)) => last = e,
                Err(_) => last = format!("GET {url}: no answer within {:?}", self.timeout),
            }
        }
        Err(last)
    }
}

#[async_trait]
impl super::latest::LatestSource for ConfluentRegistry {
    fn subject_url(&self) -> &str {
        self.subject.as_deref().unwrap_or(&self.base)
    }

    async fn latest(&self) -> Result<Option<super::latest::LatestVersion>, String> {
        let url = self.subject_url().to_string();
        self.get_with_retry(&url).await
    }
}

#[async_trait]
impl SchemaSource for ConfluentRegistry {
    async fn fetch(&self, id: SchemaId) -> Result<Option<Fetched>, String> {
        let SchemaId::Confluent(n) = id else {
            return Ok(None);
        };
        Ok(self
            .get_with_retry(&self.schema_url(n))
            .await?
            .map(|a| a.fetched))
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
        assert_eq!(
            subject_url("https://k:s@sr.example.com/subjects/orders-value/versions/latest/")
                .as_deref(),
            Some("https://sr.example.com/subjects/orders-value/versions/latest")
        );
        assert_eq!(subject_url("https://sr.example.com/registry"), None);
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("https:///path").is_err());
        assert!(parse_url("https://u:%zz@host").is_err());
    }
}
