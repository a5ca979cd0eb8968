//! The diagnosis: the one structure every output (JSON, email text, Slack,
//! chat) is rendered from. Versioned by [`SCHEMA`]; the JSON Schema lives in
//! `schema/diagnosis-v1.schema.json` and every diagnosis we produce is tested against it.

mod alarm_facts;
pub mod change;
pub mod finding;
pub mod hold;
mod planning;
pub mod summary;
pub mod suspect;

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::alarm::AlarmNotification;
use crate::classify::Classification;

pub use crate::evidence::model::{EvidenceGap, SourceTiming, Timings};
pub use alarm_facts::AlarmFacts;
pub use finding::{Evidence, Facts, Finding, FindingId};
pub use hold::{Hold, HoldOutcome};

/// The schema identifier written into every diagnosis.
pub const SCHEMA: &str = "alarm-triage/diagnosis/v1";

/// Stable identifier of one alarm transition: the same SNS message delivered
/// twice (or retried by Lambda) gets the same id, so consumers can deduplicate.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DiagnosisId(String);

impl DiagnosisId {
    /// Derived from the alarm ARN (the name when there is no ARN) and the state-change time.
    pub fn for_transition(alarm: &AlarmNotification) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(alarm.alarm_arn.as_deref().unwrap_or(&alarm.alarm_name));
        hasher.update(b"|");
        hasher.update(alarm.state_change_time.to_cloudwatch());
        hasher.update(b"|");
        hasher.update(alarm.new_state_value.as_str());
        let digest = hasher.finalize();
        let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
        DiagnosisId(format!("dx-{hex}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DiagnosisId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A full investigation (into ALARM) or a short resolution report (out of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportKind {
    Diagnosis,
    Resolution,
}

/// How loudly people should be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// What the evidence says of a hypothesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Supported,
    Refuted,
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Supported => "supported",
            Verdict::Refuted => "refuted",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// A read-only command that confirms or explores a next step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// `aws`, `kubectl` or `promql`.
    pub tool: String,
    pub text: String,
}

/// A proposal for people; the bot never carries it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextStep {
    pub proposal: String,
    pub rationale: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_offs: Option<String>,
    pub commands: Vec<Command>,
}

/// Slack refuses a button whose URL is longer than this; links are kept within it.
pub const MAX_LINK_URL_CHARS: usize = 3000;

/// A console page worth opening.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub label: String,
    pub url: String,
}

/// Everything the bot concluded about one alarm transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub schema: String,
    pub id: DiagnosisId,
    pub kind: ReportKind,
    pub generated_at: DateTime<Utc>,
    /// The verdict line: behaviour, then the cause where the evidence names one.
    pub headline: String,
    pub severity: Severity,
    /// Why this severity, in a few words (`docs/severity.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity_reason: Option<String>,
    /// The alarm's own metric at its statistic over the window read (charts
    /// shade the periods it breached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_metric: Option<crate::series::Series>,
    pub alarm: AlarmFacts,
    pub classification: Classification,
    pub findings: Vec<Finding>,
    pub evidence_gaps: Vec<EvidenceGap>,
    pub next_steps: Vec<NextStep>,
    pub links: Vec<Link>,
    pub timings: Timings,
    /// The load balancer's target groups, when the alarm watches a load balancer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_groups: Vec<summary::TargetGroupSummary>,
    /// The Kubernetes workload behind the culprit target group, when the cluster could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<summary::WorkloadSummary>,
    /// The first screen's line about change: the change that most plausibly
    /// set the causes off, or that nothing changed in the 6 h before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_changed: Option<String>,
    /// What changed around the breach, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<change::Change>,
    /// Every change before the breach judged as a suspect: onset, mechanism
    /// and locality, and the verdict they add up to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suspects: Vec<suspect::Suspect>,
    /// What the culprit's pods printed: the patterns that started or jumped
    /// with the breach first, with counts before and since, redacted examples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<crate::logs::LogReport>,
    /// Remarks about the report itself (for example that it was shortened to fit a message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// For a resolution: how long the alarm was in ALARM (from its history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_lasted_seconds: Option<u64>,
    /// Set when the report waited before it was published (`HOLD_TRANSIENT_SECONDS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Hold>,
}

impl Diagnosis {
    /// Serialises as the published JSON.
    pub fn to_json(&self) -> crate::Result<String> {
        serde_json::to_string(self).map_err(crate::Error::Serialise)
    }

    /// Serialises as indented JSON for people.
    pub fn to_json_pretty(&self) -> crate::Result<String> {
        serde_json::to_string_pretty(self).map_err(crate::Error::Serialise)
    }

    /// What an incident is about: `service:shop/checkout`, `target-group:k8s-...`,
    /// `load-balancer:app/shop/1234`, `alarm:<arn>`.
    pub fn culprit(&self) -> String {
        let d = self;
        if let Some(service) = d.culprit_service() {
            return format!("service:{service}");
        }
        if let Some(group) = d.target_groups.iter().find(|g| g.culprit) {
            return format!("target-group:{}", group.name);
        }
        if let Some(lb) = d
            .alarm
            .watched
            .as_ref()
            .and_then(|m| m.dimension("LoadBalancer"))
        {
            return format!("load-balancer:{lb}");
        }
        format!(
            "alarm:{}",
            d.alarm
                .arn
                .as_ref()
                .map_or_else(|| d.alarm.name.clone(), ToString::to_string)
        )
    }

    /// `namespace/service` of the (first) culprit target group, when known.
    pub fn culprit_service(&self) -> Option<String> {
        self.target_groups
            .iter()
            .find(|g| g.culprit)
            .and_then(|g| g.kubernetes_service.as_ref())
            .map(|s| format!("{}/{}", s.namespace, s.name))
    }

    /// The findings the evidence supports.
    pub fn supported(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.verdict == Verdict::Supported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notification(time: &str) -> AlarmNotification {
        serde_json::from_str(&format!(
            r#"{{"AlarmName":"a","AWSAccountId":"1","NewStateValue":"ALARM","OldStateValue":"OK",
                "StateChangeTime":"{time}","AlarmArn":"arn:aws:cloudwatch:eu-west-1:1:alarm:a"}}"#
        ))
        .unwrap()
    }

    #[test]
    fn the_same_transition_always_gets_the_same_id() {
        let a = DiagnosisId::for_transition(&notification("2026-11-29T10:00:00.000+0000"));
        let b = DiagnosisId::for_transition(&notification("2026-11-29T10:00:00.000Z"));
        let c = DiagnosisId::for_transition(&notification("2026-11-29T10:01:00.000+0000"));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.as_str().starts_with("dx-") && a.as_str().len() == 27);
    }

    #[test]
    fn what_a_notification_lacks_comes_from_the_definition_and_what_it_says_wins() {
        let mut facts = AlarmFacts::from_notification(&notification("2026-11-29T10:00:00.000Z"));
        facts.threshold = Some(0.8);
        let definition = crate::evidence::model::AlarmDefinition {
            name: "a".into(),
            composite: false,
            state: None,
            namespace: None,
            metric_name: None,
            dimensions: vec![],
            statistic: Some("p99".into()),
            period_seconds: Some(60),
            evaluation_periods: Some(5),
            datapoints_to_alarm: Some(3),
            threshold: Some(2.0),
            comparison: Some("GreaterThanOrEqualToThreshold".into()),
            actions_enabled: None,
        };
        facts.complete_from(&definition);
        assert_eq!(
            facts.threshold,
            Some(0.8),
            "the notification's own threshold wins"
        );
        assert_eq!(
            facts.comparison,
            Some(crate::alarm::facts::Comparison::GreaterThanOrEqual)
        );
        assert_eq!(
            (facts.evaluation_periods, facts.datapoints_to_alarm),
            (Some(5), Some(3))
        );
        assert_eq!(
            facts.statistic,
            Some(crate::alarm::facts::Statistic::Percentile(99.0))
        );
    }

    #[test]
    fn evidence_values_read_with_their_unit() {
        assert_eq!(Evidence::number("p99", 1.5, "s").display_value(), "1.5 s");
        assert_eq!(Evidence::number("nan", f64::NAN, "").display_value(), "n/a");
        assert_eq!(Evidence::number("count", 3.0, "").display_value(), "3");
        assert_eq!(
            Evidence::text("mode", "instance").display_value(),
            "instance"
        );
    }
}
