//! Slack over HTTPS: incoming webhooks, the Web API's `chat.postMessage`, and
//! the external file upload (`files.getUploadURLExternal`, the bytes,
//! `files.completeUploadExternal`) for charts.
//! The webhook URL and the token are secrets: they go into requests and
//! nowhere else (errors here describe the transport, never the URL).

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::notify::answer::{self, Answer, HttpAnswer};
use crate::notify::credentials::SlackCredentials;
use crate::notify::delivery::{Attachment, SlackPoster};

/// Slack's answers are short; a longer body is cut (it would only be logged).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Posts to Slack with the credentials from the secret.
#[derive(Debug, Clone)]
pub struct SlackWebhook {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    credentials: SlackCredentials,
    /// Base URL of the Web API (`https://slack.com/api`).
    api_url: String,
}

impl SlackWebhook {
    /// One HTTPS client per cold start, trusting the system's roots.
    pub fn new(credentials: SlackCredentials, api_url: String) -> Result<Self> {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| Error::Config {
                variable: "SSL_CERT_FILE",
                problem: format!("no trusted root certificates could be loaded ({e}); expected the system's CA bundle"),
            })?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(SlackWebhook {
            client: Client::builder(TokioExecutor::new()).build(https),
            credentials,
            api_url,
        })
    }

    async fn send(
        &self,
        url: &str,
        token: Option<&SecretString>,
        body: &Value,
        timeout: Duration,
    ) -> std::result::Result<HttpAnswer, String> {
        self.send_bytes(
            url,
            token,
            "application/json; charset=utf-8",
            Bytes::from(body.to_string()),
            timeout,
        )
        .await
    }

    async fn send_bytes(
        &self,
        url: &str,
        token: Option<&SecretString>,
        content_type: &str,
        body: Bytes,
        timeout: Duration,
    ) -> std::result::Result<HttpAnswer, String> {
        let mut request = http::Request::post(url).header(http::header::CONTENT_TYPE, content_type);
        if let Some(token) = token {
            request = request.header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", token.expose_secret()),
            );
        }
        let request = request.body(Full::new(body)).map_err(|_| {
            "the request could not be built (malformed URL in the secret, SLACK_API_URL or an upload URL)"
                .to_owned()
        })?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| transport(&e))?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let bytes = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| format!("reading the answer failed: {e}"))?
                .to_bytes();
            Ok(HttpAnswer {
                status,
                retry_after,
                body: String::from_utf8_lossy(&bytes).into_owned(),
            })
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("no answer within {} ms", timeout.as_millis()))?
    }

    /// One Web API call answering `{"ok": ...}`: its body, or why it failed.
    async fn call(
        &self,
        method: &str,
        token: &SecretString,
        content_type: &str,
        body: Bytes,
        timeout: Duration,
    ) -> std::result::Result<Value, String> {
        let answer = self
            .send_bytes(
                &format!("{}/{method}", self.api_url),
                Some(token),
                content_type,
                body,
                timeout,
            )
            .await?;
        let value: Value = serde_json::from_str(&answer.body)
            .map_err(|_| format!("{method}: HTTP {} with an unreadable answer", answer.status))?;
        if value["ok"] == true {
            Ok(value)
        } else {
            Err(format!(
                "{method}: {}",
                value["error"].as_str().unwrap_or("(no error string)")
            ))
        }
    }
}

/// `application/x-www-form-urlencoded` for `pairs`.
fn form(pairs: &[(&str, &str)]) -> Bytes {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let encoded: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", utf8_percent_encode(v, NON_ALPHANUMERIC)))
        .collect();
    Bytes::from(encoded.join("&"))
}

/// Describes a transport failure by its causes (connect, TLS, reset), which never include the URL.
fn transport(e: &hyper_util::client::legacy::Error) -> String {
    let mut text = if e.is_connect() {
        "could not connect".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

impl SlackPoster for SlackWebhook {
    fn web_api(&self) -> bool {
        self.credentials.can_thread()
    }

    async fn post(&self, channel: &str, body: &Value, timeout: Duration) -> Answer {
        let (answer, read): (_, fn(&HttpAnswer) -> Answer) = match &self.credentials {
            SlackCredentials::Webhooks(webhooks) => {
                let Some(url) = webhooks.get(channel) else {
                    return Answer::Rejected {
                        status: 0,
                        error: format!("no webhook for {channel} in the secret"),
                    };
                };
                (
                    self.send(url.expose_secret(), None, body, timeout).await,
                    answer::from_webhook,
                )
            }
            SlackCredentials::BotToken(token) => (
                self.send(
                    &format!("{}/chat.postMessage", self.api_url),
                    Some(token),
                    body,
                    timeout,
                )
                .await,
                answer::from_web_api,
            ),
        };
        match answer {
            Ok(http) => read(&http),
            Err(reason) => Answer::Unavailable { reason },
        }
    }

    async fn update(
        &self,
        channel_id: &str,
        ts: &str,
        message: &Value,
        timeout: Duration,
    ) -> std::result::Result<(), String> {
        let blocks = message["blocks"].as_array().cloned().unwrap_or_default();
        crate::feedback::SlackInteractions::update_message(
            self,
            channel_id,
            ts,
            message["text"].as_str().unwrap_or_default(),
            &blocks,
            timeout,
        )
        .await
    }

    /// Slack's external upload: ask for an upload URL, send the bytes there
    /// (without the token: the URL is pre-signed), then share the file in the thread.
    async fn upload(
        &self,
        attachment: &Attachment,
        channel_id: &str,
        thread_ts: &str,
        timeout: Duration,
    ) -> std::result::Result<(), String> {
        let SlackCredentials::BotToken(token) = &self.credentials else {
            return Err("incoming webhooks cannot upload files".to_owned());
        };
        let length = attachment.bytes.len().to_string();
        let granted = self
            .call(
                "files.getUploadURLExternal",
                token,
                "application/x-www-form-urlencoded",
                form(&[
                    ("filename", &attachment.file_name),
                    ("length", &length),
                    ("alt_txt", &attachment.title),
                ]),
                timeout,
            )
            .await?;
        let (Some(url), Some(file_id)) =
            (granted["upload_url"].as_str(), granted["file_id"].as_str())
        else {
            return Err(
                "files.getUploadURLExternal: no upload_url or file_id in the answer".to_owned(),
            );
        };
        let sent = self
            .send_bytes(
                url,
                None,
                "application/octet-stream",
                Bytes::from(attachment.bytes.clone()),
                timeout,
            )
            .await?;
        if !(200..300).contains(&sent.status) {
            return Err(format!("the upload URL answered HTTP {}", sent.status));
        }
        let complete = serde_json::json!({
            "files": [{"id": file_id, "title": attachment.title}],
            "channel_id": channel_id,
            "thread_ts": thread_ts,
        });
        self.call(
            "files.completeUploadExternal",
            token,
            "application/json; charset=utf-8",
            Bytes::from(complete.to_string()),
            timeout,
        )
        .await
        .map(|_| ())
    }
}

impl crate::feedback::SlackInteractions for SlackWebhook {
    async fn update_message(
        &self,
        channel_id: &str,
        ts: &str,
        text: &str,
        blocks: &[Value],
        timeout: Duration,
    ) -> std::result::Result<(), String> {
        let SlackCredentials::BotToken(token) = &self.credentials else {
            return Err("incoming webhooks cannot update a message".to_owned());
        };
        let body =
            serde_json::json!({"channel": channel_id, "ts": ts, "text": text, "blocks": blocks});
        self.call(
            "chat.update",
            token,
            "application/json; charset=utf-8",
            Bytes::from(body.to_string()),
            timeout,
        )
        .await
        .map(|_| ())
    }

    async fn open_form(
        &self,
        trigger_id: &str,
        view: &Value,
        timeout: Duration,
    ) -> std::result::Result<(), String> {
        let SlackCredentials::BotToken(token) = &self.credentials else {
            return Err("incoming webhooks cannot open a form".to_owned());
        };
        let body = serde_json::json!({"trigger_id": trigger_id, "view": view});
        self.call(
            "views.open",
            token,
            "application/json; charset=utf-8",
            Bytes::from(body.to_string()),
            timeout,
        )
        .await
        .map(|_| ())
    }
}
