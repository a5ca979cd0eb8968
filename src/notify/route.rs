//! Routing: which Slack channel hears about which diagnosis, and whom it
//! mentions. Configured as JSON in `SLACK_ROUTES`; the first matching route
//! wins unless it says `"continue": true` (as in Alertmanager), and a
//! diagnosis no route matches is not posted (that is how filtering works).

use serde::Deserialize;

use crate::classify::Behaviour;
use crate::diagnosis::{Diagnosis, ReportKind, Severity};
use crate::error::{Error, Result};

/// The configuration variable routes are read from.
pub const ROUTES_VARIABLE: &str = "SLACK_ROUTES";

/// One routing rule. Absent filters match everything.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Where to post: a channel (`#oncall` or an ID) with a bot token; with
    /// webhooks, the key of the webhook in the secret (webhooks are bound to a channel).
    pub channel: String,
    #[serde(default)]
    pub classification: Vec<Behaviour>,
    #[serde(default)]
    pub severity: Vec<Severity>,
    #[serde(default)]
    pub kind: Vec<ReportKind>,
    /// Alarm names starting with one of these (e.g. a team's prefix).
    #[serde(default)]
    pub alarm_prefix: Vec<String>,
    /// The culprit Kubernetes service, `namespace/name` or `namespace/*` (team channels).
    #[serde(default)]
    pub service: Vec<String>,
    /// `true`: only the quiet lines of held diagnoses that cleared
    /// (`HOLD_TRANSIENT_SECONDS`); `false`: everything but them.
    #[serde(default)]
    pub quiet: Option<bool>,
    /// Who to notify on a diagnosis (never on a resolution).
    #[serde(default)]
    pub mention: Option<Mention>,
    /// Keep looking for further matching routes after this one.
    #[serde(default, rename = "continue")]
    pub keep_going: bool,
}

/// A Slack mention, written in configuration as `here`, `channel`,
/// `user:U123ABC` or `group:S123ABC` (a user group).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mention {
    Here,
    Channel,
    User(String),
    Group(String),
}

impl Mention {
    /// Parses the configuration form; IDs are Slack's upper-case alphanumerics.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let id_ok = |id: &str| {
            !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        };
        match text.split_once(':') {
            None if text == "here" => Ok(Mention::Here),
            None if text == "channel" => Ok(Mention::Channel),
            Some(("user", id)) if id_ok(id) => Ok(Mention::User(id.to_owned())),
            Some(("group", id)) if id_ok(id) => Ok(Mention::Group(id.to_owned())),
            _ => Err(format!(
                "mention {text:?} is not one of here, channel, user:<ID>, group:<ID> (IDs like U024BE7LH or SAZ94GDB8)"
            )),
        }
    }

    /// The Slack markup that notifies.
    pub fn markup(&self) -> String {
        match self {
            Mention::Here => "<!here>".to_owned(),
            Mention::Channel => "<!channel>".to_owned(),
            Mention::User(id) => format!("<@{id}>"),
            Mention::Group(id) => format!("<!subteam^{id}>"),
        }
    }
}

impl<'de> Deserialize<'de> for Mention {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Mention::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Route {
    /// A route that takes everything to one channel, without mentions.
    pub fn everything_to(channel: impl Into<String>) -> Self {
        Route {
            channel: channel.into(),
            classification: Vec::new(),
            severity: Vec::new(),
            kind: Vec::new(),
            alarm_prefix: Vec::new(),
            service: Vec::new(),
            quiet: None,
            mention: None,
            keep_going: false,
        }
    }

    fn matches(&self, d: &Diagnosis) -> bool {
        (self.classification.is_empty()
            || self.classification.contains(&d.classification.behaviour))
            && (self.severity.is_empty() || self.severity.contains(&d.severity))
            && self
                .quiet
                .is_none_or(|q| q == d.hold.as_ref().is_some_and(|h| h.cleared()))
            && (self.kind.is_empty() || self.kind.contains(&d.kind))
            && (self.alarm_prefix.is_empty()
                || self
                    .alarm_prefix
                    .iter()
                    .any(|p| d.alarm.name.starts_with(p.as_str())))
            && (self.service.is_empty()
                || d.culprit_service().is_some_and(|s| {
                    self.service
                        .iter()
                        .any(|pattern| service_matches(pattern, &s))
                }))
    }
}

/// `namespace/name` matches itself; `namespace/*` every service in the namespace.
fn service_matches(pattern: &str, service: &str) -> bool {
    match pattern.strip_suffix("/*") {
        Some(namespace) => service
            .split_once('/')
            .is_some_and(|(ns, _)| ns == namespace),
        None => pattern == service,
    }
}

/// The routing table, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routes(Vec<Route>);

impl Routes {
    /// Parses `SLACK_ROUTES`; without it, everything goes to `default_channel`.
    pub fn parse(json: Option<&str>, default_channel: &str) -> Result<Self> {
        let Some(json) = json.filter(|j| !j.trim().is_empty()) else {
            return Ok(Routes(vec![Route::everything_to(default_channel)]));
        };
        let routes: Vec<Route> = serde_json::from_str(json).map_err(|e| Error::Config {
            variable: ROUTES_VARIABLE,
            problem: format!(
                "is not a valid routing table ({e}); expected a JSON array of routes such as \
                 [{{\"classification\": [\"sustained\"], \"severity\": [\"critical\"], \"channel\": \"#oncall\", \"mention\": \"here\"}}]; \
                 classification is flapping|sustained|transient|recovered, severity info|warning|critical, kind diagnosis|resolution, \
                 alarm_prefix a list of name prefixes, service a list of namespace/name or namespace/*"
            ),
        })?;
        if routes.is_empty() {
            return Err(Error::Config {
                variable: ROUTES_VARIABLE,
                problem: "is an empty list; expected at least one route (leave it unset to post everything to the default channel)".to_owned(),
            });
        }
        if let Some(i) = routes.iter().position(|r| r.channel.trim().is_empty()) {
            return Err(Error::Config {
                variable: ROUTES_VARIABLE,
                problem: format!("route {i} has an empty channel; expected a channel name or ID"),
            });
        }
        Ok(Routes(routes))
    }

    /// The routes a diagnosis takes, in order, at most once per channel.
    pub fn select(&self, d: &Diagnosis) -> Vec<&Route> {
        let mut chosen: Vec<&Route> = Vec::new();
        for route in &self.0 {
            if !route.matches(d) || chosen.iter().any(|c| c.channel == route.channel) {
                continue;
            }
            chosen.push(route);
            if !route.keep_going {
                break;
            }
        }
        chosen
    }

    /// Every channel a route can post to (to check them against the webhooks in the secret).
    pub fn channels(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|r| r.channel.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::tests::diagnosis;

    const TABLE: &str = r##"[
        {"classification": ["sustained"], "severity": ["critical"], "channel": "#oncall", "mention": "here", "continue": true},
        {"classification": ["flapping"], "channel": "#alerts-noise"},
        {"kind": ["resolution"], "channel": "#alerts"},
        {"classification": ["sustained"], "channel": "#alerts"}
    ]"##;

    fn channels(routes: &Routes, d: &Diagnosis) -> Vec<String> {
        routes.select(d).iter().map(|r| r.channel.clone()).collect()
    }

    #[test]
    fn flapping_goes_to_the_quiet_channel_only() {
        let routes = Routes::parse(Some(TABLE), "#x").unwrap();
        let d = diagnosis(
            Behaviour::Flapping,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        assert_eq!(channels(&routes, &d), ["#alerts-noise"]);
    }

    #[test]
    fn a_critical_sustained_alarm_pages_oncall_and_continues_to_the_team_channel() {
        let routes = Routes::parse(Some(TABLE), "#x").unwrap();
        let d = diagnosis(
            Behaviour::Sustained,
            Severity::Critical,
            ReportKind::Diagnosis,
        );
        assert_eq!(channels(&routes, &d), ["#oncall", "#alerts"]);
        assert_eq!(routes.select(&d)[0].mention, Some(Mention::Here));
    }

    #[test]
    fn a_diagnosis_no_route_matches_is_filtered_out() {
        let routes = Routes::parse(Some(TABLE), "#x").unwrap();
        let d = diagnosis(Behaviour::Transient, Severity::Info, ReportKind::Diagnosis);
        assert!(routes.select(&d).is_empty());
    }

    #[test]
    fn without_a_table_everything_goes_to_the_default_channel() {
        let routes = Routes::parse(None, "#alerts").unwrap();
        let d = diagnosis(Behaviour::Transient, Severity::Info, ReportKind::Diagnosis);
        assert_eq!(channels(&routes, &d), ["#alerts"]);
        assert_eq!(routes.select(&d)[0].mention, None);
    }

    #[test]
    fn teams_get_their_services_and_their_alarms() {
        let routes = Routes::parse(
            Some(
                r##"[{"service": ["payments/*"], "channel": "#payments"},
                     {"alarm_prefix": ["k8s-shop-"], "channel": "#shop"},
                     {"channel": "#alerts"}]"##,
            ),
            "#x",
        )
        .unwrap();
        let mut d = diagnosis(
            Behaviour::Sustained,
            Severity::Warning,
            ReportKind::Diagnosis,
        );
        assert_eq!(
            channels(&routes, &d),
            ["#shop"],
            "alarm {} has the shop prefix",
            d.alarm.name
        );
        d.alarm.name = "other".into();
        assert_eq!(
            channels(&routes, &d),
            ["#alerts"],
            "no culprit service, no prefix"
        );
        assert!(service_matches("payments/*", "payments/api"));
        assert!(service_matches("payments/api", "payments/api"));
        assert!(!service_matches("payments/*", "payments-eu/api"));
        assert!(!service_matches("payments/api", "payments/api-v2"));
    }

    #[test]
    fn a_misspelt_classification_is_a_config_error_that_lists_the_valid_ones() {
        let e = Routes::parse(
            Some(r##"[{"classification": ["flappy"], "channel": "#a"}]"##),
            "#x",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("SLACK_ROUTES")
                && text.contains("flappy")
                && text.contains("flapping|sustained"),
            "{text}"
        );
    }

    #[test]
    fn mentions_are_checked_and_rendered_as_slack_markup() {
        assert_eq!(
            Mention::parse("group:SAZ94GDB8").unwrap().markup(),
            "<!subteam^SAZ94GDB8>"
        );
        assert_eq!(
            Mention::parse("user:U024BE7LH").unwrap().markup(),
            "<@U024BE7LH>"
        );
        assert!(Mention::parse("everyone").is_err());
        assert!(Mention::parse("user:<!channel>").is_err());
        let e =
            Routes::parse(Some(r##"[{"channel": "#a", "mention": "@here"}]"##), "#x").unwrap_err();
        assert!(e.to_string().contains("@here"), "{e}");
    }

    #[test]
    fn unknown_route_fields_are_refused_rather_than_ignored() {
        assert!(
            Routes::parse(
                Some(r##"[{"channel": "#a", "severities": ["critical"]}]"##),
                "#x"
            )
            .is_err()
        );
        assert!(Routes::parse(Some("[]"), "#x").is_err());
    }
}
