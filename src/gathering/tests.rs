use std::time::Duration;

use chrono::TimeZone;

use super::*;
use crate::evidence::fake::StaticSources;
use crate::evidence::model::LoadBalancer;
use alarm_triage_core::fixtures::{alarm as notification, facts, groups};

/// The tests' alarm, as intake parses it.
fn alarm() -> AlarmFacts {
    facts(&notification())
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap()
}

fn world() -> StaticSources {
    StaticSources {
        load_balancer: Some(LoadBalancer {
            arn: "arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/x/1".into(),
            name: "x".into(),
            dimension: "app/x/1".into(),
            scheme: None,
            security_groups: Vec::new(),
        }),
        groups: groups(),
        ..StaticSources::default()
    }
}

#[tokio::test(start_paused = true)]
async fn independent_calls_never_wait_for_each_other() {
    let sources = StaticSources {
        latency: Duration::from_millis(100),
        ..world()
    };
    let started = tokio::time::Instant::now();
    let got = gather(
        &Collection::Live(sources.clone()),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    let elapsed = started.elapsed();
    // Dependent steps: target groups (the ARN comes from the alarm) -> (metrics, tags, attributes, health).
    assert_eq!(
        elapsed,
        Duration::from_millis(200),
        "two dependent steps of 100 ms"
    );
    assert!(got.evidence.alb.as_ref().unwrap().groups.len() == 6);
    // history, definition, statistics, the standing level's long read, TGs,
    // TG metrics, tags, 6 attributes, 6 health; alongside, three CloudTrail
    // lookups and the load balancer (its security groups).
    assert_eq!(sources.call_count(), 23);
}

#[tokio::test(start_paused = true)]
async fn a_source_that_misses_the_deadline_becomes_a_gap_and_the_rest_still_arrives() {
    let sources = StaticSources {
        latency: Duration::from_secs(5),
        ..world()
    };
    let budget = Budget {
        overall: Duration::from_millis(7_000),
        per_source: Duration::from_secs(10),
        ..Budget::default()
    };
    let got = gather(&Collection::Live(sources), &alarm(), budget, now()).await;
    assert!(
        got.evidence.history.is_some(),
        "first-level calls answer at 5 s"
    );
    let groups = &got
        .evidence
        .alb
        .as_ref()
        .expect("target groups answer at 5 s")
        .groups;
    assert!(
        groups.iter().all(|g| g.health.is_none()),
        "health would answer at 10 s, after the deadline"
    );
    let gap = got
        .evidence
        .gaps
        .iter()
        .find(|g| g.source == source::TARGET_HEALTH)
        .expect("a gap for target health");
    assert!(gap.reason.contains("no answer within"), "{}", gap.reason);
}

#[tokio::test]
async fn a_denied_source_names_the_missing_permission_once() {
    let sources = StaticSources {
        failing: vec![source::TARGET_HEALTH, source::ALARM_HISTORY],
        ..world()
    };
    let got = gather(
        &Collection::Live(sources),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    let health_gaps: Vec<_> = got
        .evidence
        .gaps
        .iter()
        .filter(|g| g.source == source::TARGET_HEALTH)
        .collect();
    assert_eq!(
        health_gaps.len(),
        1,
        "six groups failing the same way make one gap"
    );
    assert!(
        got.evidence
            .gaps
            .iter()
            .any(|g| g.source == source::ALARM_HISTORY && g.reason.contains("access denied"))
    );
    assert!(
        got.evidence
            .alb
            .unwrap()
            .groups
            .iter()
            .all(|g| g.health.is_none())
    );
}

#[tokio::test]
async fn a_deleted_load_balancer_is_evidence_not_an_error() {
    let sources = StaticSources {
        load_balancer: None,
        ..world()
    };
    let got = gather(
        &Collection::Live(sources),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    assert_eq!(got.evidence.alb.unwrap().load_balancer, None);
}

#[tokio::test]
async fn offline_reports_every_planned_source_as_not_collected() {
    let got = gather(
        &Collection::<StaticSources>::Offline,
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    assert!(got.evidence.gaps.len() >= 8);
    assert!(
        got.evidence
            .gaps
            .iter()
            .all(|g| g.reason == "not collected (offline)")
    );
}

#[tokio::test(start_paused = true)]
async fn a_cluster_connection_slower_than_the_deadline_is_cut_off_and_named() {
    let sources = StaticSources {
        connect_latency: Duration::from_secs(45),
        ..world()
    };
    let budget = Budget {
        overall: Duration::from_secs(20),
        per_source: Duration::from_secs(8),
        ..Budget::default()
    };
    let started = tokio::time::Instant::now();
    let got = gather(&Collection::Live(sources), &alarm(), budget, now()).await;
    assert_eq!(started.elapsed(), Duration::from_secs(8));
    let gap = got
        .evidence
        .gaps
        .iter()
        .find(|g| g.source == source::CLUSTER)
        .expect("the connection is a gap");
    assert!(gap.reason.contains("8000 ms"), "{gap:?}");
}

/// The first group breaches at 2 s while the others answer in 0.1 s, with
/// the same traffic: the breakdown names it, and its workload is walked.
fn world_with_a_culprit() -> StaticSources {
    use crate::evidence::model::MetricSeries;
    use crate::evidence::service_map::{MappingSource, ServiceRef};
    use crate::evidence::workload::{PodInfo, PodSeries, TargetGroupBindings, Workload};
    let points = |value: f64| -> Vec<(DateTime<Utc>, f64)> {
        (1..=10)
            .rev()
            .map(|i| (now() - chrono::Duration::minutes(i), value))
            .collect()
    };
    let mut metrics = std::collections::BTreeMap::new();
    let mut put = |id: String, value: f64| {
        metrics.insert(
            id.clone(),
            MetricSeries {
                id,
                points: points(value),
            },
        );
    };
    put("alarm_stat".into(), 1.2);
    for i in 0..6 {
        put(format!("g{i}_metric"), if i == 0 { 2.0 } else { 0.1 });
        put(format!("g{i}_traffic"), 600.0);
    }
    let pod = |name: &str| PodInfo {
        name: name.into(),
        phase: "Running".into(),
        node: None,
        ready: true,
        restarts: 0,
        owner_replica_set: None,
        created: None,
        ip: None,
        reason: None,
        containers: vec![],
        scheduling_messages: vec![],
        lifecycle: Default::default(),
    };
    StaticSources {
        metrics,
        bindings: Some(TargetGroupBindings::default()),
        workload: Some(Workload {
            cluster: None,
            service: ServiceRef {
                namespace: "shop".into(),
                name: "web".into(),
                source: MappingSource::Tags,
            },
            selector: Default::default(),
            pods: vec![pod("web-1"), pod("web-2")],
            deployment: None,
            hpa: None,
            snapshot: None,
            nodes: vec![],
            provisioning: None,
            partial: vec![],
            activity: Default::default(),
            placement: vec![],
        }),
        pod_series: Some(PodSeries::default()),
        ..world()
    }
}

#[tokio::test(start_paused = true)]
async fn the_critical_path_is_two_aws_steps_and_three_cluster_steps() {
    let sources = StaticSources {
        latency: Duration::from_millis(100),
        ..world_with_a_culprit()
    };
    let started = tokio::time::Instant::now();
    let got = gather(
        &Collection::Live(sources.clone()),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    let culprit = got
        .breakdown
        .as_ref()
        .and_then(|b| b.summaries.iter().find(|s| s.culprit));
    assert_eq!(
        culprit.map(|c| c.name.as_str()),
        Some("tg0"),
        "{:#?}",
        got.breakdown
    );
    assert!(got.evidence.workload.is_some());
    assert!(got.evidence.pod_series.is_some(), "{:?}", got.evidence.gaps);
    // Target groups -> their metrics (bindings meanwhile); then the Service ->
    // the pods -> (the Deployment, and the pods' series at the same time).
    assert_eq!(started.elapsed(), Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn pods_never_listed_mean_no_series_query_and_no_wait() {
    let sources = StaticSources {
        latency: Duration::from_millis(100),
        failing: vec![source::KUBERNETES],
        ..world_with_a_culprit()
    };
    let got = gather(
        &Collection::Live(sources),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    assert!(got.evidence.workload.is_none());
    assert!(got.evidence.pod_series.is_none());
    assert!(
        got.evidence
            .timings
            .sources
            .iter()
            .all(|t| t.source != source::POD_SERIES)
    );
}

#[tokio::test]
async fn a_service_the_cluster_confirmed_is_shown_without_a_question_mark() {
    use crate::evidence::service_map::MappingSource;
    let mut sources = world_with_a_culprit();
    if let Some(w) = sources.workload.as_mut() {
        w.service.source = MappingSource::TargetGroupBinding;
    }
    let got = gather(
        &Collection::Live(sources),
        &alarm(),
        Budget::default(),
        now(),
    )
    .await;
    let d = crate::triage::assemble(
        &notification(),
        crate::diagnosis::ReportKind::Diagnosis,
        &got,
        &crate::classify::ClassifierConfig::default(),
        now(),
    );
    let culprit = d
        .target_groups
        .iter()
        .find(|g| g.culprit)
        .expect("a culprit");
    assert_eq!(culprit.label(), "tg0 (shop/web)");
}
