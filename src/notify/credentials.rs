//! What the Slack secret holds. The value is read from Secrets Manager or an
//! SSM SecureString and kept as a [`SecretString`]: its `Debug` is redacted,
//! and no error or log line ever includes it (parse errors describe its shape only).

use std::collections::BTreeMap;

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::error::{Error, Result};

/// The key a lone webhook URL is filed under.
pub const DEFAULT_WEBHOOK: &str = "default";

/// How the bot talks to Slack.
#[derive(Debug, Clone)]
pub enum SlackCredentials {
    /// Incoming webhooks, by the channel (route key) each is bound to.
    Webhooks(BTreeMap<String, SecretString>),
    /// A bot token for `chat.postMessage` (can thread replies).
    BotToken(SecretString),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretDocument {
    webhook_url: Option<String>,
    #[serde(default)]
    webhooks: BTreeMap<String, String>,
    bot_token: Option<String>,
    /// Read by the feedback function only ([`FeedbackSecrets`]).
    #[serde(default)]
    signing_secret: Option<String>,
}

impl SlackCredentials {
    /// Parses the secret's value: a webhook URL, a bot token (`xoxb-…`), or a
    /// JSON object with `webhook_url`, `webhooks` ({channel: url}) or `bot_token`.
    /// `source` names where it came from, for the error.
    pub fn parse(value: &SecretString, source: &str) -> Result<Self> {
        let text = value.expose_secret().trim();
        let refuse = |problem: String| Error::Secret {
            secret: source.to_owned(),
            problem,
        };
        if text.starts_with("xoxb-") || text.starts_with("xoxp-") {
            return Ok(SlackCredentials::BotToken(SecretString::from(
                text.to_owned(),
            )));
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            check_url(text).map_err(refuse)?;
            return Ok(SlackCredentials::Webhooks(BTreeMap::from([(
                DEFAULT_WEBHOOK.to_owned(),
                SecretString::from(text.to_owned()),
            )])));
        }
        let shape = || {
            format!(
                "received a {}-character value that is not a webhook URL, a bot token (xoxb-...) or a JSON object \
                 with webhook_url, webhooks ({{\"#channel\": \"https://hooks.slack.com/...\"}}) or bot_token",
                text.chars().count()
            )
        };
        if !text.starts_with('{') {
            return Err(refuse(shape()));
        }
        // serde's message could quote the value: describe the shape only.
        let document: SecretDocument = serde_json::from_str(text).map_err(|_| refuse(shape()))?;
        match (
            document.bot_token,
            document.webhook_url,
            document.webhooks.is_empty(),
        ) {
            (Some(token), None, true) if token.starts_with("xox") => {
                Ok(SlackCredentials::BotToken(token.into()))
            }
            (Some(_), None, true) => Err(refuse(
                "bot_token does not start with xoxb- or xoxp-".to_owned(),
            )),
            (None, Some(url), true) => {
                check_url(&url).map_err(refuse)?;
                Ok(SlackCredentials::Webhooks(BTreeMap::from([(
                    DEFAULT_WEBHOOK.to_owned(),
                    url.into(),
                )])))
            }
            (None, None, false) => {
                let mut webhooks = BTreeMap::new();
                for (channel, url) in document.webhooks {
                    check_url(&url).map_err(|p| refuse(format!("webhook for {channel:?}: {p}")))?;
                    webhooks.insert(channel, SecretString::from(url));
                }
                Ok(SlackCredentials::Webhooks(webhooks))
            }
            _ => Err(refuse(
                "expected exactly one of bot_token, webhook_url or webhooks".to_owned(),
            )),
        }
    }

    /// Checks that every channel the routes name can be posted to.
    pub fn check_channels<'a>(&self, channels: impl Iterator<Item = &'a str>) -> Result<()> {
        let SlackCredentials::Webhooks(webhooks) = self else {
            return Ok(());
        };
        let missing: Vec<&str> = channels.filter(|c| !webhooks.contains_key(*c)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Error::Config {
            variable: crate::notify::route::ROUTES_VARIABLE,
            problem: format!(
                "routes post to {missing:?} but the secret has webhooks only for {:?}; with webhooks, \
                 a route's channel is the key of its webhook in the secret",
                webhooks.keys().collect::<Vec<_>>()
            ),
        })
    }

    /// Whether replies can be threaded (only `chat.postMessage` returns the message's `ts`).
    pub fn can_thread(&self) -> bool {
        matches!(self, SlackCredentials::BotToken(_))
    }
}

/// What the feedback function needs from the same secret: the app's signing
/// secret (to verify requests) and the bot token (to update the message).
#[derive(Debug, Clone)]
pub struct FeedbackSecrets {
    pub signing_secret: SecretString,
    pub bot_token: SecretString,
}

impl FeedbackSecrets {
    /// Parses `{"bot_token": "xoxb-...", "signing_secret": "..."}`.
    pub fn parse(value: &SecretString, source: &str) -> Result<Self> {
        let refuse = |problem: &str| Error::Secret {
            secret: source.to_owned(),
            problem: problem.to_owned(),
        };
        let document: SecretDocument = serde_json::from_str(value.expose_secret().trim())
            .map_err(|_| refuse("is not a JSON object with bot_token and signing_secret (the feedback function needs both)"))?;
        match (document.bot_token, document.signing_secret) {
            (Some(token), Some(signing)) if token.starts_with("xox") && signing.len() >= 16 => {
                Ok(FeedbackSecrets {
                    signing_secret: signing.into(),
                    bot_token: token.into(),
                })
            }
            (Some(_), Some(_)) => Err(refuse(
                "bot_token must start with xoxb- and signing_secret must be the app's signing secret (16 characters or more)",
            )),
            (None, _) => Err(refuse(
                "has no bot_token; the feedback function updates messages through the Web API",
            )),
            (_, None) => Err(refuse(
                "has no signing_secret; copy it from the Slack app's Basic Information page",
            )),
        }
    }
}

/// Slack URLs must be HTTPS; plain HTTP is accepted only on loopback (the local world).
pub fn check_url(url: &str) -> std::result::Result<(), String> {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return Err("is not a URL".to_owned());
    };
    match (uri.scheme_str(), uri.host()) {
        (Some("https"), Some(_)) => Ok(()),
        (Some("http"), Some("127.0.0.1" | "localhost" | "[::1]")) => Ok(()),
        (Some("http"), Some(_)) => {
            Err("uses plain http to a non-loopback host; expected https".to_owned())
        }
        _ => Err("expected an https:// URL".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SlackCredentials> {
        SlackCredentials::parse(
            &SecretString::from(text.to_owned()),
            "secret alarm-triage/slack",
        )
    }

    #[test]
    fn a_lone_webhook_url_is_the_default_webhook() {
        let SlackCredentials::Webhooks(w) =
            parse("https://hooks.slack.com/services/T0/B0/abc\n").unwrap()
        else {
            panic!("expected webhooks")
        };
        assert_eq!(
            w[DEFAULT_WEBHOOK].expose_secret(),
            "https://hooks.slack.com/services/T0/B0/abc"
        );
    }

    #[test]
    fn a_bot_token_can_be_bare_or_in_json() {
        assert!(parse("xoxb-1-2-abc").unwrap().can_thread());
        assert!(
            parse(r#"{"bot_token": "xoxb-1-2-abc"}"#)
                .unwrap()
                .can_thread()
        );
    }

    #[test]
    fn webhooks_per_channel_are_checked_against_the_routes() {
        let c = parse(r##"{"webhooks": {"#oncall": "https://hooks.slack.com/a", "#alerts": "https://hooks.slack.com/b"}}"##).unwrap();
        assert!(c.check_channels(["#oncall", "#alerts"].into_iter()).is_ok());
        let e = c
            .check_channels(["#oncall", "#random"].into_iter())
            .unwrap_err();
        assert!(e.to_string().contains("#random"), "{e}");
    }

    #[test]
    fn a_malformed_secret_is_described_without_its_value() {
        let secret = r#"{"bot_token": "xoxb-SECRETVALUE", "webhook_url": "https://hooks.slack.com/SECRETVALUE"}"#;
        let e = parse(secret).unwrap_err().to_string();
        assert!(!e.contains("SECRETVALUE"), "{e}");
        let e = parse("{not json SECRETVALUE").unwrap_err().to_string();
        assert!(
            !e.contains("SECRETVALUE") && e.contains("character value"),
            "{e}"
        );
        let e = parse("SECRETVALUE").unwrap_err().to_string();
        assert!(!e.contains("SECRETVALUE"), "{e}");
    }

    #[test]
    fn plain_http_is_refused_except_on_loopback() {
        assert!(parse("http://hooks.example.com/x").is_err());
        assert!(parse("http://127.0.0.1:8080/services/x").is_ok());
    }

    #[test]
    fn the_feedback_secrets_need_both_the_token_and_the_signing_secret() {
        let both = SecretString::from(
            r#"{"bot_token": "xoxb-1-2-abc", "signing_secret": "0123456789abcdef0123"}"#.to_owned(),
        );
        assert!(FeedbackSecrets::parse(&both, "s").is_ok());
        let token_only = SecretString::from(r#"{"bot_token": "xoxb-1-2-abc"}"#.to_owned());
        let e = FeedbackSecrets::parse(&token_only, "s")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("signing_secret") && !e.contains("xoxb-1-2-abc"),
            "{e}"
        );
        assert!(
            parse(r#"{"bot_token": "xoxb-1-2-abc", "signing_secret": "0123456789abcdef0123"}"#)
                .is_ok(),
            "notify reads the same secret"
        );
    }

    #[test]
    fn debug_output_never_shows_the_secret() {
        let c = parse("xoxb-SECRETVALUE").unwrap();
        assert!(!format!("{c:?}").contains("SECRETVALUE"));
    }
}
