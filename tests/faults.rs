//! The diagnose pipeline against a local world when things are missing or
//! failing: each case still produces a diagnosis that says what happened,
//! never an error (publishing aside).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

use std::path::PathBuf;
use std::time::Duration;

use alarm_triage::adapters::{AwsSources, Destinations};
use alarm_triage::classify::ClassifierConfig;
use alarm_triage::diagnosis::{Diagnosis, Verdict};
use alarm_triage::evidence::{Budget, Collection, source};
use alarm_triage::pipeline::{Now, Outcome, Triage};
use serde_json::{Value, json};
use support::LocalWorld;

async fn diagnose_with(world: &LocalWorld, event: &[u8], budget: Budget) -> Diagnosis {
    let config = world.sdk_config().await;
    let settings =
        alarm_triage::config::Config::from_lookup(|k| world.env.get(k).cloned()).unwrap();
    let triage = Triage {
        collection: Collection::Live(AwsSources::new(&config, &settings.cluster)),
        publisher: Destinations::new(
            &config,
            Some(world.var("DIAGNOSIS_TOPIC_ARN").to_owned()),
            None,
        ),
        budget,
        classifier: ClassifierConfig::default(),
    };
    let outcomes = triage
        .handle_bytes(event, Now::At(chrono::Utc::now()))
        .await
        .unwrap();
    match outcomes.into_iter().next().unwrap() {
        Outcome::Report {
            diagnosis,
            published,
        } => {
            assert_eq!(published.len(), 1, "published to the topic");
            *diagnosis
        }
        other => panic!("expected a report, got {other:?}"),
    }
}

async fn diagnose(world: &LocalWorld, event: &[u8]) -> Diagnosis {
    diagnose_with(
        world,
        event,
        Budget {
            per_source: Duration::from_secs(8),
            ..Budget::default()
        },
    )
    .await
}

fn captured(world: &LocalWorld) -> Vec<u8> {
    std::fs::read(world.deliver()).unwrap()
}

/// The captured event with the alarm message edited.
fn edited(event: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut event: Value = serde_json::from_slice(event).unwrap();
    let mut message: Value =
        serde_json::from_str(event["Records"][0]["Sns"]["Message"].as_str().unwrap()).unwrap();
    edit(&mut message);
    event["Records"][0]["Sns"]["Message"] = Value::String(message.to_string());
    serde_json::to_vec(&event).unwrap()
}

fn gap<'a>(d: &'a Diagnosis, source: &str) -> Option<&'a str> {
    d.evidence_gaps
        .iter()
        .find(|g| g.source == source)
        .map(|g| g.reason.as_str())
}

fn verdict(d: &Diagnosis, id: &str) -> Option<Verdict> {
    d.findings
        .iter()
        .find(|f| f.id.as_str() == id)
        .map(|f| f.verdict)
}

#[tokio::test]
async fn a_live_diagnosis_validates_against_the_schema_and_reads_nothing_twice() {
    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let event = captured(&world);
    world.calls(true);
    let d = diagnose(&world, &event).await;
    let schema: Value =
        serde_json::from_str(include_str!("../schema/diagnosis-v1.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let value = serde_json::to_value(&d).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let calls = world.calls(false);
    // One call per question: nothing is read twice.
    assert_eq!(
        calls.get("monitoring:DescribeAlarmHistory"),
        Some(&1),
        "{calls:?}"
    );
    // The alarm's metric over the window, the target groups' series, and
    // the alarm's metric over 14 days (the standing level).
    assert_eq!(calls.get("monitoring:GetMetricData"), Some(&3), "{calls:?}");
    assert_eq!(
        calls.get("elasticloadbalancing:DescribeTargetGroups"),
        Some(&1),
        "{calls:?}"
    );
    assert_eq!(
        calls.get("elasticloadbalancing:DescribeTargetHealth"),
        Some(&6),
        "{calls:?}"
    );
    assert_eq!(calls.get("sns:Publish"), Some(&1), "{calls:?}");
    let describe_cluster: u64 = calls
        .iter()
        .filter(|(k, _)| k.starts_with("eks:"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(
        describe_cluster, 1,
        "one DescribeCluster per diagnosis: {calls:?}"
    );
}

#[tokio::test]
async fn a_warm_container_shares_target_groups_tags_and_the_cluster_but_reads_health_afresh() {
    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let event = captured(&world);
    let config = world.sdk_config().await;
    let settings =
        alarm_triage::config::Config::from_lookup(|k| world.env.get(k).cloned()).unwrap();
    let triage = Triage {
        collection: Collection::Live(AwsSources::new(&config, &settings.cluster)),
        publisher: alarm_triage::publish::NoPublisher,
        budget: Budget::default(),
        classifier: ClassifierConfig::default(),
    };
    world.calls(true);
    for _ in 0..3 {
        triage
            .handle_bytes(&event, Now::At(chrono::Utc::now()))
            .await
            .unwrap();
    }
    let calls = world.calls(false);
    let count = |k: &str| calls.get(k).copied().unwrap_or(0);
    assert_eq!(
        count("elasticloadbalancing:DescribeTargetGroups"),
        1,
        "{calls:?}"
    );
    assert_eq!(count("elasticloadbalancing:DescribeTags"), 1, "{calls:?}");
    assert_eq!(
        count("elasticloadbalancing:DescribeTargetGroupAttributes"),
        6,
        "{calls:?}"
    );
    assert_eq!(
        count("elasticloadbalancing:DescribeTargetHealth"),
        18,
        "{calls:?}"
    );
    assert_eq!(count("monitoring:DescribeAlarmHistory"), 3, "{calls:?}");
}

#[tokio::test]
async fn deleted_alarm_deleted_load_balancer_and_empty_target_group_are_reported_not_errors() {
    let world = LocalWorld::up("alb-sustained-hot-pod");
    let event = captured(&world);
    let config = world.sdk_config().await;
    let elb = aws_sdk_elasticloadbalancingv2::Client::new(&config);

    // A target group with no targets left.
    let web = &world.facts["target_groups"][1];
    let targets: Vec<_> = elb
        .describe_target_health()
        .target_group_arn(web["arn"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .target_health_descriptions()
        .iter()
        .filter_map(|d| d.target().cloned())
        .collect();
    elb.deregister_targets()
        .target_group_arn(web["arn"].as_str().unwrap())
        .set_targets(Some(targets))
        .send()
        .await
        .unwrap();
    let d = diagnose(&world, &event).await;
    let empty = d
        .target_groups
        .iter()
        .find(|g| g.name == web["name"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        (empty.targets_healthy, empty.targets_not_healthy),
        (Some(0), Some(0))
    );

    // The alarm is deleted.
    aws_sdk_cloudwatch::Client::new(&config)
        .delete_alarms()
        .alarm_names(world.facts["alarm_name"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let d = diagnose(&world, &event).await;
    assert!(
        d.notes.iter().any(|n| n.contains("no longer exists")),
        "{:?}",
        d.notes
    );

    // The load balancer is deleted.
    elb.delete_load_balancer()
        .load_balancer_arn(world.facts["load_balancer_arn"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let d = diagnose(&world, &event).await;
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("load balancer") && n.contains("no longer exists")),
        "{:?}",
        d.notes
    );
    assert!(d.target_groups.is_empty());
}

#[tokio::test]
async fn zero_datapoints_no_load_balancer_dimension_and_composite_alarms_say_so() {
    let world = LocalWorld::up("alb-low-traffic-artifact");
    let event = captured(&world);

    // A load balancer with no metrics at all.
    let silent = edited(&event, |m| {
        m["Trigger"]["Dimensions"][0]["value"] =
            json!("app/k8s-silent-0000000000/0000000000000000");
    });
    let d = diagnose(&world, &silent).await;
    assert!(
        d.notes.iter().any(|n| n.contains("no datapoints")),
        "{:?}",
        d.notes
    );
    assert_eq!(
        verdict(&d, "traffic.low_traffic_artifact"),
        Some(Verdict::Inconclusive)
    );

    // A metric without the LoadBalancer dimension.
    let no_lb = edited(&event, |m| {
        m["Trigger"]["Dimensions"] = json!([{ "name": "TargetGroup", "value": "targetgroup/x/1" }]);
    });
    let d = diagnose(&world, &no_lb).await;
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("no LoadBalancer dimension")),
        "{:?}",
        d.notes
    );

    // A composite alarm (not in this world's CloudWatch).
    let composite = std::fs::read(
        support::repo_root().join("events/sns-composite-alarm-checkout-degraded.json"),
    )
    .unwrap();
    let d = diagnose(&world, &composite).await;
    assert!(
        d.notes.iter().any(|n| n.contains("composite")),
        "{:?}",
        d.notes
    );
    assert!(
        d.notes.iter().any(|n| n.contains("no longer exists")),
        "{:?}",
        d.notes
    );
}

#[tokio::test]
async fn throttling_access_denied_and_a_slow_elbv2_become_gaps_within_the_deadline() {
    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let event = captured(&world);
    world.inject(json!([
        { "service": "monitoring", "operation": "GetMetricData", "status": 400, "code": "Throttling", "message": "Rate exceeded" },
        { "service": "monitoring", "operation": "DescribeAlarmHistory", "status": 403, "code": "AccessDenied", "message": "not authorized" },
        { "service": "elasticloadbalancing", "operation": "DescribeTargetGroups", "delay_ms": 4000 }
    ]));
    let budget = Budget {
        overall: Duration::from_millis(2500),
        per_source: Duration::from_secs(10),
        ..Budget::default()
    };
    let d = diagnose_with(&world, &event, budget).await;
    let throttled = gap(&d, source::METRIC_STATISTICS).expect("a metrics gap");
    assert!(
        throttled.contains("throttled") || throttled.contains("no answer"),
        "{throttled}"
    );
    let denied = gap(&d, source::ALARM_HISTORY).expect("a history gap");
    assert!(
        denied.contains("cloudwatch:DescribeAlarmHistory"),
        "{denied}"
    );
    let slow = gap(&d, source::TARGET_GROUPS).expect("a target group gap");
    assert!(
        slow.contains("no answer within"),
        "the deadline cut the slow call: {slow}"
    );
}

#[test]
fn the_same_transition_replayed_keeps_its_diagnosis_id() {
    let event = support::repo_root().join("events/sns-alb-alarm-target-response-time.json");
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_alarm-triage"))
                .args(["replay", "--offline", "--format", "json"])
                .arg(PathBuf::from(&event))
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .output()
                .unwrap();
            let d: Value = serde_json::from_slice(&out.stdout).unwrap();
            d["id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(ids[0], ids[1]);
}

fn kubernetes_gap(d: &Diagnosis) -> &str {
    gap(d, source::KUBERNETES).unwrap_or_else(|| panic!("no Kubernetes gap: {:?}", d.evidence_gaps))
}

#[tokio::test]
async fn no_access_entry_and_a_missing_rbac_rule_say_what_to_fix() {
    let unauthorized = LocalWorld::variant("alb-low-traffic-artifact", |w| {
        w.replace(
            "prometheus:\n",
            "kubernetes:\n  auth: unauthorized\n\nprometheus:\n",
        )
    });
    let world = LocalWorld::up(unauthorized.to_str().unwrap());
    let d = diagnose(&world, &captured(&world)).await;
    let reason = kubernetes_gap(&d);
    assert!(
        reason.contains("401") && reason.contains("access entry"),
        "{reason}"
    );
    drop(world);

    let forbidden = LocalWorld::variant("alb-low-traffic-artifact", |w| {
        w.replace(
            "prometheus:\n",
            "kubernetes:\n  forbid: [/pods]\n\nprometheus:\n",
        )
    });
    let world = LocalWorld::up(forbidden.to_str().unwrap());
    let d = diagnose(&world, &captured(&world)).await;
    let reason = kubernetes_gap(&d);
    assert!(
        reason.contains("403") && reason.contains("infra/k8s/clusterrole.yaml"),
        "{reason}"
    );
}

#[tokio::test]
async fn prometheus_is_read_directly_when_given_its_url() {
    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let event = captured(&world);
    let config = world.sdk_config().await;
    let mut settings =
        alarm_triage::config::Config::from_lookup(|k| world.env.get(k).cloned()).unwrap();
    settings.cluster.prometheus_url = Some(world.var("PROMETHEUS_LOCAL_URL").to_owned());
    let triage = Triage {
        collection: Collection::Live(AwsSources::new(&config, &settings.cluster)),
        publisher: alarm_triage::publish::NoPublisher,
        budget: Budget::default(),
        classifier: ClassifierConfig::default(),
    };
    let outcomes = triage
        .handle_bytes(&event, Now::At(chrono::Utc::now()))
        .await
        .unwrap();
    let Outcome::Report { diagnosis, .. } = outcomes.into_iter().next().unwrap() else {
        panic!("a report")
    };
    let workload = diagnosis.workload.clone().expect("the workload was read");
    assert!(
        workload
            .series_origin
            .as_deref()
            .unwrap()
            .starts_with("Prometheus at http://127.0.0.1"),
        "{:?}",
        workload.series_origin
    );
    assert_eq!(
        verdict(&diagnosis, "pods.worker_ceiling"),
        Some(Verdict::Supported)
    );
}

/// A laptop with the function's environment must not page people by replaying a capture.
#[tokio::test]
async fn a_replay_publishes_only_when_asked_to() {
    let world = LocalWorld::up("alb-low-traffic-artifact");
    let event = world.deliver();
    let queue = world.var("DIAGNOSIS_QUEUE_URL").to_owned();
    let replay = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_alarm-triage"))
            .arg("replay")
            .arg(&event)
            .args(["--format", "json"])
            .args(extra)
            .envs(world.env.iter())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .output()
            .unwrap()
    };
    let quiet = replay(&[]);
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert_eq!(quiet.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("pass --publish"), "{stderr}");
    assert!(
        world
            .drain_queue(&queue, 1, Duration::from_secs(3))
            .await
            .is_empty(),
        "nothing reached the queue without --publish"
    );

    let loud = replay(&["--publish"]);
    let stderr = String::from_utf8_lossy(&loud.stderr);
    assert_eq!(loud.status.code(), Some(0), "{stderr}");
    let printed: Value = serde_json::from_slice(&loud.stdout).unwrap();
    // The queue directly, and through its subscription to the topic.
    let sent = world.drain_queue(&queue, 2, Duration::from_secs(10)).await;
    assert!(!sent.is_empty(), "{stderr}");
    let id = printed["id"].as_str().unwrap();
    assert!(sent.iter().all(|m| m.contains(id)), "{sent:?}");
    assert!(
        stderr.contains(&format!("published {id} as sns:")),
        "{stderr}"
    );
}
