//! The alarm's facts as types, parsed once at intake: which alarm (its ARN),
//! how it compares, which statistic it evaluates, which metric it watches and
//! what that metric measures. Later stages read these and never re-parse a
//! string; the defaults CloudWatch applies when a field is absent live here
//! and nowhere else.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Dimension;

/// CloudWatch's period when an alarm does not say (the shortest standard one).
pub const DEFAULT_PERIOD_SECONDS: u32 = 60;

/// `arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>`, split once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AlarmArn {
    pub partition: String,
    pub region: String,
    pub account: String,
    pub name: String,
}

impl AlarmArn {
    /// `None` unless `text` is a CloudWatch alarm ARN with every part present
    /// (the name may itself hold colons).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.splitn(7, ':');
        let (arn, partition, service, region, account, resource, name) = (
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
        );
        let present = [partition, region, account, name]
            .iter()
            .all(|p| !p.is_empty());
        (arn == "arn" && service == "cloudwatch" && resource == "alarm" && present).then(|| {
            AlarmArn {
                partition: partition.to_owned(),
                region: region.to_owned(),
                account: account.to_owned(),
                name: name.to_owned(),
            }
        })
    }

    /// The ARN of a resource of `service` in the alarm's partition, region and account.
    pub fn sibling(&self, service: &str, resource: &str) -> String {
        format!(
            "arn:{}:{service}:{}:{}:{resource}",
            self.partition, self.region, self.account
        )
    }
}

impl fmt::Display for AlarmArn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "arn:{}:cloudwatch:{}:{}:alarm:{}",
            self.partition, self.region, self.account, self.name
        )
    }
}

/// How an alarm compares its statistic with the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Comparison {
    GreaterThan,
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
    /// Anomaly bands: outside, below or above the band.
    OutsideBand,
    BelowBand,
    AboveBand,
}

impl Comparison {
    /// CloudWatch's most common comparison, assumed when an alarm does not say.
    pub const DEFAULT: Comparison = Comparison::GreaterThan;

    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "GreaterThanThreshold" => Comparison::GreaterThan,
            "GreaterThanOrEqualToThreshold" => Comparison::GreaterThanOrEqual,
            "LessThanThreshold" => Comparison::LessThan,
            "LessThanOrEqualToThreshold" => Comparison::LessThanOrEqual,
            "LessThanLowerOrGreaterThanUpperThreshold" => Comparison::OutsideBand,
            "LessThanLowerThreshold" => Comparison::BelowBand,
            "GreaterThanUpperThreshold" => Comparison::AboveBand,
            _ => return None,
        })
    }

    /// CloudWatch's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Comparison::GreaterThan => "GreaterThanThreshold",
            Comparison::GreaterThanOrEqual => "GreaterThanOrEqualToThreshold",
            Comparison::LessThan => "LessThanThreshold",
            Comparison::LessThanOrEqual => "LessThanOrEqualToThreshold",
            Comparison::OutsideBand => "LessThanLowerOrGreaterThanUpperThreshold",
            Comparison::BelowBand => "LessThanLowerThreshold",
            Comparison::AboveBand => "GreaterThanUpperThreshold",
        }
    }

    /// The operator people read (`>`), or words for the bands.
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::GreaterThan => ">",
            Comparison::GreaterThanOrEqual => ">=",
            Comparison::LessThan => "<",
            Comparison::LessThanOrEqual => "<=",
            Comparison::OutsideBand => "outside the band",
            Comparison::BelowBand => "below the band",
            Comparison::AboveBand => "above the band",
        }
    }

    /// Whether a high value is the bad one (the alarm fires going up).
    pub fn fires_upwards(self) -> bool {
        matches!(
            self,
            Comparison::GreaterThan | Comparison::GreaterThanOrEqual | Comparison::AboveBand
        )
    }

    /// Whether `value` breaches a static `threshold`; bands are not static, so never.
    pub fn breaches(self, value: f64, threshold: f64) -> bool {
        match self {
            Comparison::GreaterThan => value > threshold,
            Comparison::GreaterThanOrEqual => value >= threshold,
            Comparison::LessThan => value < threshold,
            Comparison::LessThanOrEqual => value <= threshold,
            Comparison::OutsideBand | Comparison::BelowBand | Comparison::AboveBand => false,
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The statistic an alarm evaluates, in CloudWatch's API spelling.
#[derive(Debug, Clone, PartialEq)]
pub enum Statistic {
    Average,
    Sum,
    Minimum,
    Maximum,
    SampleCount,
    /// `p99`, `p99.9`: the percentile, strictly between 0 and 100.
    Percentile(f64),
    /// Trimmed means and the other extended statistics (`tm99`, `wm90`,
    /// `IQM`, `TM(10%:90%)`), kept as written.
    Extended(String),
}

impl Statistic {
    /// CloudWatch's default, assumed when an alarm does not say.
    pub const DEFAULT: Statistic = Statistic::Average;

    /// Either spelling: the notification's `AVERAGE` or the API's `Average`, `p99`.
    pub fn parse(text: &str) -> Self {
        let text = text.trim();
        match text.to_ascii_lowercase().as_str() {
            "average" => return Statistic::Average,
            "sum" => return Statistic::Sum,
            "minimum" => return Statistic::Minimum,
            "maximum" => return Statistic::Maximum,
            "samplecount" => return Statistic::SampleCount,
            _ => {}
        }
        text.strip_prefix(['p', 'P'])
            .and_then(|n| n.parse::<f64>().ok())
            .filter(|q| *q > 0.0 && *q < 100.0)
            .map_or_else(
                || Statistic::Extended(text.to_owned()),
                Statistic::Percentile,
            )
    }

    /// The percentile (99 for `p99`), for percentile statistics.
    pub fn percentile(&self) -> Option<f64> {
        match self {
            Statistic::Percentile(q) => Some(*q),
            _ => None,
        }
    }

    /// A statistic of the typical request (the mean, the median, a trimmed
    /// or winsorized mean), as opposed to the tail or the extremes.
    pub fn is_typical(&self) -> bool {
        match self {
            Statistic::Average => true,
            Statistic::Percentile(q) => *q <= 50.0,
            Statistic::Extended(text) => {
                let lower = text.to_ascii_lowercase();
                lower.starts_with("tm") || lower.starts_with("wm") || lower == "iqm"
            }
            _ => false,
        }
    }

    /// An extended statistic (percentiles, trimmed means): the CLI and the
    /// API take these in a separate parameter from the five simple ones.
    pub fn is_extended(&self) -> bool {
        matches!(self, Statistic::Percentile(_) | Statistic::Extended(_))
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statistic::Average => f.write_str("Average"),
            Statistic::Sum => f.write_str("Sum"),
            Statistic::Minimum => f.write_str("Minimum"),
            Statistic::Maximum => f.write_str("Maximum"),
            Statistic::SampleCount => f.write_str("SampleCount"),
            Statistic::Percentile(q) => write!(f, "p{q}"),
            Statistic::Extended(text) => f.write_str(text),
        }
    }
}

impl Serialize for Statistic {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Statistic {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Statistic::parse(&String::deserialize(deserializer)?))
    }
}

/// A metric: namespace, name and dimensions, all present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricRef {
    pub namespace: String,
    pub name: String,
    pub dimensions: Vec<Dimension>,
}

impl MetricRef {
    /// The value of the dimension called `name`.
    pub fn dimension(&self, name: &str) -> Option<&str> {
        self.dimensions
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.value.as_str())
    }

    /// What the metric measures.
    pub fn family(&self) -> MetricFamily {
        MetricFamily::of(&self.name)
    }
}

/// What a metric measures, whichever load balancer publishes it: the
/// headline's verb, the findings that apply and the steps that help follow
/// from it, not from the metric's spelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricFamily {
    /// How long targets take to answer (`TargetResponseTime`).
    Latency,
    /// Failures the targets answered or caused: their 5xx, their TCP resets.
    TargetErrors,
    /// Failures the load balancer produced itself (ELB 5xx and 502/503/504,
    /// the NLB's own resets): no target answered, none was healthy, or none in time.
    LoadBalancerErrors,
    /// 4xx: a broken client or route rather than a broken service.
    ClientErrors,
    /// Targets failing their health checks (`UnHealthyHostCount`).
    UnhealthyHosts,
    /// Targets passing them (`HealthyHostCount`): the alarm fires when too few do.
    HealthyHosts,
    /// Connections the load balancer refused or could not make.
    Connections,
    /// How much traffic arrives (requests, flows, bytes).
    Traffic,
    /// A metric no rule knows.
    Other,
}

impl MetricFamily {
    /// The family of a metric of `AWS/ApplicationELB` or `AWS/NetworkELB`, by name.
    pub fn of(metric_name: &str) -> Self {
        match metric_name {
            "TargetResponseTime" => MetricFamily::Latency,
            "UnHealthyHostCount" => MetricFamily::UnhealthyHosts,
            "HealthyHostCount" => MetricFamily::HealthyHosts,
            "TCP_Target_Reset_Count" => MetricFamily::TargetErrors,
            "TCP_ELB_Reset_Count" => MetricFamily::LoadBalancerErrors,
            "RequestCount"
            | "RequestCountPerTarget"
            | "NewFlowCount"
            | "ActiveFlowCount"
            | "ProcessedBytes"
            | "NewConnectionCount"
            | "ActiveConnectionCount" => MetricFamily::Traffic,
            "RejectedConnectionCount"
            | "TargetConnectionErrorCount"
            | "PortAllocationErrorCount"
            | "TCP_Client_Reset_Count" => MetricFamily::Connections,
            m if m.starts_with("HTTPCode_ELB_") && m.contains('5') => {
                MetricFamily::LoadBalancerErrors
            }
            m if m.contains("5XX") => MetricFamily::TargetErrors,
            m if m.contains("4XX") => MetricFamily::ClientErrors,
            _ => MetricFamily::Other,
        }
    }

    /// Errors or failing health: the target side and the load balancer's side
    /// of the failures are weighed, and the health checks are examined.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            MetricFamily::TargetErrors
                | MetricFamily::LoadBalancerErrors
                | MetricFamily::UnhealthyHosts
                | MetricFamily::HealthyHosts
        )
    }

    /// What a breaching group is, in a word: an unhealthy-host alarm is never "slow".
    pub fn symptom(self) -> &'static str {
        match self {
            MetricFamily::Latency => "slow",
            MetricFamily::LoadBalancerErrors => "failing behind the load balancer",
            MetricFamily::TargetErrors => "failing",
            MetricFamily::ClientErrors => "rejecting requests",
            MetricFamily::UnhealthyHosts | MetricFamily::HealthyHosts => "unhealthy",
            MetricFamily::Connections | MetricFamily::Traffic | MetricFamily::Other => "breaching",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alarm_arn_splits_into_its_parts_and_prints_back() {
        let text = "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:api:p99 high";
        let arn = AlarmArn::parse(text).unwrap();
        assert_eq!(arn.region, "eu-west-1");
        assert_eq!(arn.account, "123456789012");
        assert_eq!(arn.name, "api:p99 high");
        assert_eq!(arn.to_string(), text);
        assert_eq!(
            arn.sibling("elasticloadbalancing", "loadbalancer/app/x/1"),
            "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/x/1"
        );
    }

    #[test]
    fn anything_but_an_alarm_arn_is_refused() {
        for text in [
            "",
            "arn:aws:sns:eu-west-1:1:topic",
            "arn:aws:cloudwatch:eu-west-1::alarm:x",
            "arn:aws:cloudwatch:eu-west-1:1:dashboard:x",
            "not an arn",
        ] {
            assert_eq!(AlarmArn::parse(text), None, "{text}");
        }
    }

    #[test]
    fn statistics_read_either_spelling_and_print_the_api_one() {
        for (text, printed) in [
            ("AVERAGE", "Average"),
            ("Sum", "Sum"),
            ("SampleCount", "SampleCount"),
            ("p99", "p99"),
            ("p99.9", "p99.9"),
            ("tm99", "tm99"),
            ("TM(10%:90%)", "TM(10%:90%)"),
            ("p100", "p100"),
        ] {
            assert_eq!(Statistic::parse(text).to_string(), printed, "{text}");
        }
        assert_eq!(Statistic::parse("p95").percentile(), Some(95.0));
        assert_eq!(Statistic::parse("p100").percentile(), None);
    }

    #[test]
    fn comparisons_round_trip_and_bands_never_breach_a_static_threshold() {
        for text in [
            "GreaterThanThreshold",
            "GreaterThanOrEqualToThreshold",
            "LessThanThreshold",
            "LessThanOrEqualToThreshold",
            "LessThanLowerOrGreaterThanUpperThreshold",
            "LessThanLowerThreshold",
            "GreaterThanUpperThreshold",
        ] {
            assert_eq!(Comparison::parse(text).unwrap().as_str(), text);
        }
        assert!(Comparison::GreaterThanOrEqual.breaches(1.0, 1.0));
        assert!(!Comparison::GreaterThan.breaches(1.0, 1.0));
        assert!(Comparison::LessThan.breaches(0.0, 1.0));
        assert!(!Comparison::OutsideBand.breaches(100.0, 1.0));
        assert_eq!(Comparison::parse("Bigger"), None);
    }

    #[test]
    fn families_follow_what_the_metric_measures_on_either_load_balancer() {
        assert_eq!(
            MetricFamily::of("TargetResponseTime"),
            MetricFamily::Latency
        );
        assert_eq!(
            MetricFamily::of("HTTPCode_Target_5XX_Count"),
            MetricFamily::TargetErrors
        );
        assert_eq!(
            MetricFamily::of("TCP_Target_Reset_Count"),
            MetricFamily::TargetErrors
        );
        assert_eq!(
            MetricFamily::of("HTTPCode_ELB_503_Count"),
            MetricFamily::LoadBalancerErrors
        );
        assert_eq!(
            MetricFamily::of("HTTPCode_ELB_4XX_Count"),
            MetricFamily::ClientErrors
        );
        assert_eq!(
            MetricFamily::of("UnHealthyHostCount"),
            MetricFamily::UnhealthyHosts
        );
        assert_eq!(MetricFamily::of("NewFlowCount"), MetricFamily::Traffic);
        assert_eq!(MetricFamily::of("CPUUtilization"), MetricFamily::Other);
        assert!(MetricFamily::of("HealthyHostCount").is_failure());
        assert!(!MetricFamily::of("TargetResponseTime").is_failure());
    }
}
