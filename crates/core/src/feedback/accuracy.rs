//! How often the named causes held, by the answers people gave.
//!
//! Each answer judges the causes its diagnosis named:
//! - "right": every cause confirmed;
//! - "partly": the causes marked wrong are wrong, the others confirmed (with
//!   none marked, the causes are not judged one by one);
//! - "wrong": the causes marked wrong are wrong; with none marked, all are.
//!
//! A diagnosis that named no cause ("nothing wrong found") is judged as a
//! whole under [`NO_CAUSE`]. Precision is confirmed / judged. Each person
//! counts once per diagnosis: their last answer.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};

use super::{Answer, DiagnosisRecord, Judgement};
use crate::diagnosis::FindingId;

/// The key under which diagnoses that named no cause are counted.
pub const NO_CAUSE: &str = "(no cause named)";

/// What the rows are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    Finding,
    Alarm,
    Service,
}

impl Grouping {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "finding" => Some(Grouping::Finding),
            "alarm" => Some(Grouping::Alarm),
            "service" => Some(Grouping::Service),
            _ => None,
        }
    }

    fn heading(self) -> &'static str {
        match self {
            Grouping::Finding => "finding",
            Grouping::Alarm => "alarm",
            Grouping::Service => "service",
        }
    }
}

/// One row: causes confirmed out of those judged, and how many answers judged them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    pub key: String,
    pub confirmed: u32,
    pub judged: u32,
    pub answers: u32,
}

impl Row {
    pub fn precision(&self) -> Option<f64> {
        (self.judged > 0).then(|| f64::from(self.confirmed) / f64::from(self.judged))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AccuracyReport {
    pub since: DateTime<Utc>,
    pub grouping: Grouping,
    /// Diagnoses posted with buttons since `since`.
    pub diagnoses: usize,
    /// Of those, the ones somebody answered.
    pub answered: usize,
    pub answers: usize,
    pub verdicts: BTreeMap<&'static str, usize>,
    /// Most judged first.
    pub rows: Vec<Row>,
}

/// One cause's fate in one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Confirmed,
    Wrong,
}

/// The causes `answer` judged, with their marks.
fn judged(answer: &Answer) -> Vec<(String, Mark)> {
    let causes: Vec<&FindingId> = answer.diagnosis.causes().collect();
    if causes.is_empty() {
        let mark = match answer.judgement {
            Judgement::Right => Some(Mark::Confirmed),
            Judgement::Wrong => Some(Mark::Wrong),
            Judgement::Partly => None,
        };
        return mark.map(|m| (NO_CAUSE.to_owned(), m)).into_iter().collect();
    }
    let marked = |id: &FindingId| answer.wrong_causes.contains(id);
    let none_marked = !causes.iter().any(|c| marked(c));
    causes
        .into_iter()
        .filter_map(|id| {
            let mark = match answer.judgement {
                Judgement::Right => Some(Mark::Confirmed),
                Judgement::Wrong if none_marked || marked(id) => Some(Mark::Wrong),
                Judgement::Wrong => None,
                Judgement::Partly if none_marked => None,
                Judgement::Partly if marked(id) => Some(Mark::Wrong),
                Judgement::Partly => Some(Mark::Confirmed),
            };
            mark.map(|m| (id.as_str().to_owned(), m))
        })
        .collect()
}

/// Each person's last answer per diagnosis, answered at or after `since`.
fn last_answers(answers: &[Answer], since: DateTime<Utc>) -> Vec<&Answer> {
    let mut last: HashMap<(&str, &str), &Answer> = HashMap::new();
    for a in answers.iter().filter(|a| a.answered_at >= since) {
        let key = (a.diagnosis.diagnosis_id.as_str(), a.user.as_str());
        if last
            .get(&key)
            .is_none_or(|b| b.answered_at <= a.answered_at)
        {
            last.insert(key, a);
        }
    }
    let mut kept: Vec<&Answer> = last.into_values().collect();
    kept.sort_by_key(|a| a.answered_at);
    kept
}

pub fn accuracy(
    records: &[DiagnosisRecord],
    answers: &[Answer],
    since: DateTime<Utc>,
    grouping: Grouping,
) -> AccuracyReport {
    let answers = last_answers(answers, since);
    let posted: HashSet<&str> = records
        .iter()
        .filter(|r| r.recorded_at >= since)
        .map(|r| r.diagnosis_id.as_str())
        .collect();
    let answered: HashSet<&str> = answers
        .iter()
        .map(|a| a.diagnosis.diagnosis_id.as_str())
        .collect();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut verdicts = BTreeMap::new();
    for answer in &answers {
        *verdicts.entry(answer.judgement.as_str()).or_insert(0) += 1;
        let marks = judged(answer);
        let mut touched = HashSet::new();
        for (finding, mark) in marks {
            let key = match grouping {
                Grouping::Finding => finding,
                Grouping::Alarm => answer.diagnosis.alarm.clone(),
                Grouping::Service => answer
                    .diagnosis
                    .service
                    .clone()
                    .unwrap_or_else(|| "(no service)".to_owned()),
            };
            let row = rows.entry(key.clone()).or_insert_with(|| Row {
                key: key.clone(),
                ..Row::default()
            });
            row.judged += 1;
            row.confirmed += u32::from(mark == Mark::Confirmed);
            if touched.insert(key) {
                row.answers += 1;
            }
        }
    }
    let mut rows: Vec<Row> = rows.into_values().collect();
    rows.sort_by(|a, b| b.judged.cmp(&a.judged).then_with(|| a.key.cmp(&b.key)));
    AccuracyReport {
        since,
        grouping,
        // A diagnosis answered but recorded before `since` still counts as posted.
        diagnoses: posted.union(&answered).count(),
        answered: answered.len(),
        answers: answers.len(),
        verdicts,
        rows,
    }
}

/// The report as a table for a terminal.
pub fn render(report: &AccuracyReport) -> String {
    let mut out = format!(
        "Accuracy of alarm-triage's diagnoses since {}, by {}\n",
        report.since.format("%Y-%m-%d %H:%M UTC"),
        report.grouping.heading()
    );
    let share = if report.diagnoses == 0 {
        "-".to_owned()
    } else {
        format!(
            "{:.0} %",
            100.0 * report.answered as f64 / report.diagnoses as f64
        )
    };
    let verdicts: Vec<String> = report
        .verdicts
        .iter()
        .map(|(v, n)| format!("{v} {n}"))
        .collect();
    out.push_str(&format!(
        "diagnoses posted {}, answered {} ({share}); answers {}{}\n\n",
        report.diagnoses,
        report.answered,
        report.answers,
        if verdicts.is_empty() {
            String::new()
        } else {
            format!(" ({})", verdicts.join(", "))
        }
    ));
    if report.rows.is_empty() {
        out.push_str("No answers yet: nothing to measure.\n");
        return out;
    }
    let width = report
        .rows
        .iter()
        .map(|r| r.key.chars().count())
        .max()
        .unwrap_or(0)
        .max(report.grouping.heading().len());
    out.push_str(&format!(
        "{:<width$}  {:>9}  {:>6}  {:>9}  {:>7}\n",
        report.grouping.heading(),
        "confirmed",
        "judged",
        "precision",
        "answers"
    ));
    for row in &report.rows {
        let precision = row
            .precision()
            .map_or("-".to_owned(), |p| format!("{:.0} %", 100.0 * p));
        out.push_str(&format!(
            "{:<width$}  {:>9}  {:>6}  {:>9}  {:>7}\n",
            row.key, row.confirmed, row.judged, precision, row.answers
        ));
    }
    out
}

/// "per-process ceiling: confirmed 7 of 8 times on this service", for each
/// cause of a new diagnosis that people judged before on `service`.
pub fn track_record(answers: &[Answer], service: &str, causes: &[FindingId]) -> Vec<String> {
    let on_service: Vec<Answer> = last_answers(answers, DateTime::<Utc>::MIN_UTC)
        .into_iter()
        .filter(|a| a.diagnosis.service.as_deref() == Some(service))
        .cloned()
        .collect();
    causes
        .iter()
        .filter_map(|cause| {
            let (confirmed, judged) = on_service
                .iter()
                .flat_map(judged)
                .filter(|(id, _)| id == cause.as_str())
                .fold((0, 0), |(c, j), (_, mark)| {
                    (c + u32::from(mark == Mark::Confirmed), j + 1)
                });
            (judged > 0).then(|| {
                format!(
                    "{}: confirmed {confirmed} of {judged} time{} on this service",
                    cause.title(),
                    if judged == 1 { "" } else { "s" }
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone};

    use super::*;
    use crate::diagnosis::finding::Role;
    use crate::feedback::{RecordedFinding, SlackUserId};

    fn at(day: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, 10, 0, 0).unwrap()
    }

    fn record(id: &str, alarm: &str, causes: &[FindingId]) -> DiagnosisRecord {
        DiagnosisRecord {
            diagnosis_id: id.into(),
            alarm: alarm.into(),
            family: "AWS/ApplicationELB".into(),
            service: Some("shop/checkout".into()),
            findings: causes
                .iter()
                .map(|c| RecordedFinding {
                    id: c.clone(),
                    role: Role::Cause,
                })
                .chain([RecordedFinding {
                    id: FindingId::LowTrafficArtifact,
                    role: Role::RuledOut,
                }])
                .collect(),
            recorded_at: at(1),
        }
    }

    fn answer(
        record: &DiagnosisRecord,
        user: &str,
        judgement: Judgement,
        wrong: &[FindingId],
        day: u32,
    ) -> Answer {
        Answer {
            diagnosis: record.clone(),
            user: SlackUserId::parse(user).unwrap(),
            judgement,
            wrong_causes: wrong.to_vec(),
            note: None,
            answered_at: at(day),
        }
    }

    #[test]
    fn precision_per_finding_counts_confirmed_causes_over_judged_ones() {
        let ceiling = record(
            "dx-1",
            "checkout-latency",
            &[FindingId::WorkerCeiling, FindingId::HpaCannotReact],
        );
        let other = record("dx-2", "checkout-latency", &[FindingId::WorkerCeiling]);
        let unanswered = record("dx-3", "search-5xx", &[FindingId::TargetErrors]);
        let answers = [
            answer(
                &ceiling,
                "U0ALICE01",
                Judgement::Partly,
                &[FindingId::HpaCannotReact],
                2,
            ),
            answer(&other, "U0ALICE01", Judgement::Wrong, &[], 3),
        ];
        let report = accuracy(
            &[ceiling, other, unanswered],
            &answers,
            at(1),
            Grouping::Finding,
        );
        assert_eq!(
            (report.diagnoses, report.answered, report.answers),
            (3, 2, 2)
        );
        let row = |key: &str| report.rows.iter().find(|r| r.key == key).unwrap().clone();
        let ceiling_row = row("pods.worker_ceiling");
        assert_eq!((ceiling_row.confirmed, ceiling_row.judged), (1, 2));
        let hpa = row("hpa.cannot_react");
        assert_eq!((hpa.confirmed, hpa.judged), (0, 1));
        assert!(
            report
                .rows
                .iter()
                .all(|r| r.key != "traffic.low_traffic_artifact"),
            "ruled out is not judged"
        );
    }

    #[test]
    fn a_persons_last_answer_wins_and_counts_once() {
        let r = record("dx-1", "checkout-latency", &[FindingId::WorkerCeiling]);
        let answers = [
            answer(&r, "U0ALICE01", Judgement::Wrong, &[], 2),
            answer(&r, "U0ALICE01", Judgement::Right, &[], 3),
            answer(&r, "U0BOB0001", Judgement::Right, &[], 3),
        ];
        let report = accuracy(std::slice::from_ref(&r), &answers, at(1), Grouping::Alarm);
        assert_eq!(report.answers, 2);
        assert_eq!(report.rows[0].key, "checkout-latency");
        assert_eq!((report.rows[0].confirmed, report.rows[0].judged), (2, 2));
    }

    #[test]
    fn partly_without_marks_judges_no_single_cause() {
        let r = record("dx-1", "a", &[FindingId::WorkerCeiling]);
        let report = accuracy(
            std::slice::from_ref(&r),
            &[answer(&r, "U0ALICE01", Judgement::Partly, &[], 2)],
            at(1),
            Grouping::Finding,
        );
        assert_eq!(report.answered, 1);
        assert!(report.rows.is_empty());
    }

    #[test]
    fn a_quiet_diagnosis_is_judged_as_a_whole() {
        let r = record("dx-1", "a", &[]);
        let report = accuracy(
            std::slice::from_ref(&r),
            &[answer(&r, "U0ALICE01", Judgement::Right, &[], 2)],
            at(1),
            Grouping::Finding,
        );
        assert_eq!(report.rows[0].key, NO_CAUSE);
        assert_eq!(report.rows[0].precision(), Some(1.0));
    }

    #[test]
    fn answers_before_the_window_are_left_out() {
        let r = record("dx-1", "a", &[FindingId::WorkerCeiling]);
        let report = accuracy(
            std::slice::from_ref(&r),
            &[answer(&r, "U0ALICE01", Judgement::Right, &[], 2)],
            at(2) + Duration::hours(1),
            Grouping::Finding,
        );
        assert_eq!((report.answers, report.diagnoses), (0, 0));
        assert!(render(&report).contains("No answers yet"));
    }

    #[test]
    fn the_track_record_names_the_cause_and_the_count_on_the_service() {
        let r = record("dx-1", "a", &[FindingId::WorkerCeiling]);
        let answers: Vec<Answer> = (0..8)
            .map(|i| {
                let judgement = if i == 0 {
                    Judgement::Wrong
                } else {
                    Judgement::Right
                };
                answer(&r, &format!("U0PERSON{i}"), judgement, &[], 2)
            })
            .collect();
        assert_eq!(
            track_record(
                &answers,
                "shop/checkout",
                &[FindingId::WorkerCeiling, FindingId::CpuThrottling]
            ),
            ["per-process ceiling: confirmed 7 of 8 times on this service"]
        );
        assert!(track_record(&answers, "shop/cart", &[FindingId::WorkerCeiling]).is_empty());
    }
}
