//! The local world answers the real aws-sdk-rust and kube-rs clients over real
//! HTTP: moto (with the project's CloudWatch and ELBv2 extensions and the CBOR
//! bridge), Prometheus with backfilled series, and the read-only Kubernetes API.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

mod support;

use std::net::TcpStream;
use std::time::Duration;

use alarm_triage::history::StateChange;
use aws_sdk_cloudwatch::primitives::DateTime as SmithyTime;
use aws_sdk_cloudwatch::types::{
    Dimension, HistoryItemType, Metric, MetricDataQuery, MetricStat, StateValue,
};
use chrono::{TimeZone, Utc};
use support::LocalWorld;

fn smithy(t: chrono::DateTime<Utc>) -> SmithyTime {
    SmithyTime::from_millis(t.timestamp_millis())
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .parse()
        .unwrap()
}

#[tokio::test]
async fn cloudwatch_serves_alarms_history_and_percentiles_to_the_rust_sdk() {
    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let cw = aws_sdk_cloudwatch::Client::new(&world.sdk_config().await);
    let alarm_name = world.facts["alarm_name"].as_str().unwrap();

    let alarms = cw
        .describe_alarms()
        .alarm_names(alarm_name)
        .send()
        .await
        .unwrap();
    let alarm = &alarms.metric_alarms()[0];
    assert_eq!(
        alarm.state_value(),
        Some(&StateValue::Ok),
        "the loaded history ends in OK"
    );
    assert_eq!(alarm.threshold(), Some(0.8));

    // DescribeAlarmHistory, all pages (3 items a page forces pagination).
    let mut pages = cw
        .describe_alarm_history()
        .alarm_name(alarm_name)
        .history_item_type(HistoryItemType::StateUpdate)
        .max_records(3)
        .into_paginator()
        .send();
    let mut changes = Vec::new();
    while let Some(page) = pages.next().await {
        for item in page.unwrap().alarm_history_items() {
            let at = Utc
                .timestamp_millis_opt(item.timestamp().unwrap().to_millis().unwrap())
                .unwrap();
            changes.push(
                StateChange::from_history_data(at, item.history_data().unwrap())
                    .expect("AWS-shaped HistoryData"),
            );
        }
    }
    assert_eq!(
        changes.len() as u64,
        world.facts["alarm_history_items"].as_u64().unwrap()
    );
    assert!(
        changes.windows(2).all(|w| w[0].at >= w[1].at),
        "newest first, as AWS pages it"
    );

    // GetMetricData: Average, p99 and Maximum per target group in one call.
    let lb = world.facts["load_balancer_dimension"].as_str().unwrap();
    let groups = world.facts["target_groups"].as_array().unwrap();
    let now = Utc::now();
    let mut request = cw
        .get_metric_data()
        .start_time(smithy(now - chrono::Duration::hours(3)))
        .end_time(smithy(now));
    for (i, group) in groups.iter().enumerate() {
        for stat in ["Average", "p99", "Maximum"] {
            request = request.metric_data_queries(
                MetricDataQuery::builder()
                    .id(format!("g{i}_{}", stat.to_lowercase()))
                    .metric_stat(
                        MetricStat::builder()
                            .stat(stat)
                            .period(60)
                            .metric(
                                Metric::builder()
                                    .namespace("AWS/ApplicationELB")
                                    .metric_name("TargetResponseTime")
                                    .dimensions(
                                        Dimension::builder().name("LoadBalancer").value(lb).build(),
                                    )
                                    .dimensions(
                                        Dimension::builder()
                                            .name("TargetGroup")
                                            .value(group["dimension"].as_str().unwrap())
                                            .build(),
                                    )
                                    .build(),
                            )
                            .build(),
                    )
                    .build(),
            );
        }
    }
    let data = request.send().await.unwrap();
    let peak = |id: &str| {
        data.metric_data_results()
            .iter()
            .find(|r| r.id() == Some(id))
            .unwrap()
            .values()
            .iter()
            .copied()
            .fold(f64::MIN, f64::max)
    };
    assert!(
        peak("g0_p99") >= 12.0,
        "checkout's p99 during bursts, got {}",
        peak("g0_p99")
    );
    assert!(peak("g0_maximum") >= 29.0);
    assert!(peak("g0_average") > 2.0);
    for i in 1..groups.len() {
        assert!(peak(&format!("g{i}_p99")) < 0.5, "group {i} stays fast");
    }
}

#[tokio::test]
async fn an_alarm_state_change_notifies_sns_with_the_real_payload_and_is_recorded() {
    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let event = world.deliver();
    let bytes = std::fs::read(&event).unwrap();
    let deliveries = alarm_triage::intake::deliveries_from_bytes(&bytes).unwrap();
    let delivery = deliveries.into_iter().next().unwrap().unwrap();
    let alarm = alarm_triage::intake::alarm_from_delivery(&delivery)
        .expect("a CloudWatch alarm notification");
    assert_eq!(alarm.new_state_value.as_str(), "ALARM");
    assert_eq!(alarm.old_state_value.as_str(), "OK");
    assert_eq!(alarm.region, "EU (Ireland)");
    assert_eq!(alarm.region_code(), Some("eu-west-1"));
    assert_eq!(alarm.aws_account_id, "111122223333");
    assert_eq!(alarm.statistic().as_deref(), Some("Average"));
    assert_eq!(
        alarm.primary_metric().unwrap().dimensions[0].name,
        "LoadBalancer"
    );

    let cw = aws_sdk_cloudwatch::Client::new(&world.sdk_config().await);
    let newest = cw
        .describe_alarm_history()
        .alarm_name(&alarm.alarm_name)
        .history_item_type(HistoryItemType::StateUpdate)
        .send()
        .await
        .unwrap();
    assert!(
        newest.alarm_history_items()[0]
            .history_summary()
            .unwrap()
            .contains("from OK to ALARM")
    );

    // SNS and SQS through the Rust SDK: publish to the diagnosis topic, read it from its queue.
    let config = world.sdk_config().await;
    let sns = aws_sdk_sns::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    sns.publish()
        .topic_arn(world.var("DIAGNOSIS_TOPIC_ARN"))
        .message("{\"probe\":1}")
        .send()
        .await
        .unwrap();
    let received = sqs
        .receive_message()
        .queue_url(world.var("DIAGNOSIS_QUEUE_URL"))
        .wait_time_seconds(5)
        .send()
        .await
        .unwrap();
    let body = received.messages()[0].body().unwrap();
    assert!(body.contains("probe"), "{body}");
}

#[tokio::test]
async fn elbv2_reports_target_types_algorithms_tags_and_unhealthy_targets() {
    let world = LocalWorld::up("alb-sustained-hot-pod");
    let elb = aws_sdk_elasticloadbalancingv2::Client::new(&world.sdk_config().await);
    let groups = elb
        .describe_target_groups()
        .load_balancer_arn(world.facts["load_balancer_arn"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let api = groups
        .target_groups()
        .iter()
        .find(|g| {
            g.target_group_name()
                .is_some_and(|n| n.starts_with("k8s-pay-api"))
        })
        .expect("the api target group");
    assert_eq!(api.target_type().map(|t| t.as_str()), Some("ip"));
    let arn = api.target_group_arn().unwrap();
    let attributes = elb
        .describe_target_group_attributes()
        .target_group_arn(arn)
        .send()
        .await
        .unwrap();
    assert!(
        attributes
            .attributes()
            .iter()
            .any(|a| a.key() == Some("load_balancing.algorithm.type")
                && a.value() == Some("round_robin"))
    );
    let tags = elb.describe_tags().resource_arns(arn).send().await.unwrap();
    assert!(
        tags.tag_descriptions()[0]
            .tags()
            .iter()
            .any(|t| t.key() == Some("elbv2.k8s.aws/cluster"))
    );
    let health = elb
        .describe_target_health()
        .target_group_arn(arn)
        .send()
        .await
        .unwrap();
    let states: Vec<&str> = health
        .target_health_descriptions()
        .iter()
        .map(|d| d.target_health().unwrap().state().unwrap().as_str())
        .collect();
    assert_eq!(
        states.iter().filter(|s| **s == "unhealthy").count(),
        1,
        "{states:?}"
    );
    assert_eq!(
        states.iter().filter(|s| **s == "healthy").count(),
        3,
        "{states:?}"
    );
}

#[tokio::test]
async fn eks_describes_a_private_cluster_whose_endpoint_does_not_answer() {
    let world = LocalWorld::up("eks-private-endpoint");
    let eks = aws_sdk_eks::Client::new(&world.sdk_config().await);
    let cluster = eks
        .describe_cluster()
        .name(world.var("EKS_CLUSTER_NAME"))
        .send()
        .await
        .unwrap();
    let vpc = cluster.cluster().unwrap().resources_vpc_config().unwrap();
    assert!(!vpc.endpoint_public_access());
    assert!(vpc.endpoint_private_access());

    // The API server address accepts connections and never answers.
    let config = kube_config(&world).await;
    let client = kube::Client::try_from(config).unwrap();
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(client, "shop");
    let outcome =
        tokio::time::timeout(Duration::from_secs(10), pods.list(&Default::default())).await;
    match outcome {
        Err(_) => {}
        Ok(result) => assert!(result.is_err(), "a private endpoint must not answer"),
    }
}

async fn kube_config(world: &LocalWorld) -> kube::Config {
    let kubeconfig = kube::config::Kubeconfig::read_from(world.var("KUBECONFIG")).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.connect_timeout = Some(Duration::from_secs(2));
    config.read_timeout = Some(Duration::from_secs(2));
    config
}

#[tokio::test]
async fn kube_rs_reads_the_world_through_the_api_server() {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::autoscaling::{v1 as hpa_v1, v2 as hpa_v2};
    use k8s_openapi::api::core::v1::{Node, Pod};
    use kube::Api;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};

    let world = LocalWorld::up("alb-flapping-worker-ceiling");
    let client = kube::Client::try_from(kube_config(&world).await).unwrap();

    let pods: Api<Pod> = Api::namespaced(client.clone(), "shop");
    let listed = pods
        .list(&ListParams::default().labels("app=checkout"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 4);
    let limits = listed.items[0].spec.as_ref().unwrap().containers[0]
        .resources
        .as_ref()
        .unwrap()
        .limits
        .as_ref()
        .unwrap();
    assert_eq!(limits["cpu"].0, "1500m");
    assert!(
        pods.list(&ListParams::default().labels("app in (cart, search)"))
            .await
            .unwrap()
            .items
            .is_empty()
    );

    let deployment = Api::<Deployment>::namespaced(client.clone(), "shop")
        .get("checkout")
        .await
        .unwrap();
    assert_eq!(deployment.spec.unwrap().replicas, Some(4));
    let sets = Api::<ReplicaSet>::namespaced(client.clone(), "shop")
        .list(&ListParams::default().labels("app=checkout"))
        .await
        .unwrap();
    assert_eq!(sets.items.len(), 2);
    assert_eq!(
        Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );

    let v2 = Api::<hpa_v2::HorizontalPodAutoscaler>::namespaced(client.clone(), "shop")
        .get("checkout")
        .await
        .unwrap();
    assert_eq!(v2.spec.as_ref().unwrap().max_replicas, 7);
    let v1 = Api::<hpa_v1::HorizontalPodAutoscaler>::namespaced(client.clone(), "shop")
        .get("checkout")
        .await
        .unwrap();
    assert_eq!(v1.spec.unwrap().target_cpu_utilization_percentage, Some(80));

    let metrics = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("metrics.k8s.io", "v1beta1", "PodMetrics"),
        "pods",
    );
    let snapshot = Api::<DynamicObject>::namespaced_with(client.clone(), "shop", &metrics)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(snapshot.items.len(), 4);

    let bindings = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("elbv2.k8s.aws", "v1beta1", "TargetGroupBinding"),
        "targetgroupbindings",
    );
    let bound = Api::<DynamicObject>::namespaced_with(client.clone(), "shop", &bindings)
        .get("k8s-shop-checkout-8a1f2c3d4e")
        .await
        .unwrap();
    let arn = bound.data["spec"]["targetGroupARN"].as_str().unwrap();
    assert_eq!(
        arn,
        world.facts["target_groups"][0]["arn"].as_str().unwrap(),
        "the binding names the seeded target group"
    );

    // The service proxy reaches the in-cluster Prometheus, with rate() over backfilled counters.
    let request = http::Request::get(
        "/api/v1/namespaces/monitoring/services/prometheus-server:9090/proxy/api/v1/query?query=sum%20by%20(pod)%20(rate(container_cpu_usage_seconds_total%7Bnamespace%3D%22shop%22%7D%5B5m%5D))",
    )
    .body(Vec::new())
    .unwrap();
    let answer: serde_json::Value = client.request(request).await.unwrap();
    assert_eq!(answer["status"], "success");
    assert_eq!(answer["data"]["result"].as_array().unwrap().len(), 4);

    // Writes are refused; no token is 401.
    let mut anonymous = kube_config(&world).await;
    anonymous.auth_info = Default::default();
    let denied = Api::<Pod>::namespaced(kube::Client::try_from(anonymous).unwrap(), "shop")
        .list(&ListParams::default())
        .await;
    match denied {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 401),
        other => panic!("expected 401, got {other:?}"),
    }
}

#[test]
fn stopping_the_world_frees_its_ports() {
    let world = LocalWorld::up("alb-low-traffic-artifact");
    let ports = [
        port_of(world.endpoint()),
        port_of(world.var("PROMETHEUS_LOCAL_URL")),
        port_of(world.var("KUBE_API_URL")),
    ];
    for port in ports {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_ok(),
            "port {port} is up"
        );
    }
    eprintln!("world started in {} s", world.facts["startup_seconds"]);
    drop(world);
    for port in ports {
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "port {port} still answers after down"
        );
    }
}

#[test]
fn a_malformed_world_fails_with_the_file_the_field_and_what_was_expected() {
    let root = support::repo_root();
    let dir = root
        .join("target/worlds/malformed")
        .join(format!("{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good =
        std::fs::read_to_string(root.join("tests/worlds/alb-low-traffic-artifact/world.yaml"))
            .unwrap();
    std::fs::write(
        dir.join("world.yaml"),
        good.replace("target_type: instance", "target_type: container"),
    )
    .unwrap();
    let output = std::process::Command::new(root.join(".venv/bin/python"))
        .arg(root.join("infra/local/stack.py"))
        .args(["up", dir.to_str().unwrap(), "--state"])
        .arg(dir.join("state"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("world.yaml"), "{message}");
    assert!(
        message.contains("target_groups[0].target_type"),
        "{message}"
    );
    assert!(
        message.contains("instance, ip or lambda") && message.contains("container"),
        "{message}"
    );
    assert!(!dir.join("state/pids").exists(), "nothing was started");
}

/// A group with single slow requests and a drifting error level: the
/// generator once took a slow request's time for the ramp's offset.
#[test]
fn single_slow_requests_and_a_ramping_error_level_share_a_group() {
    let variant = LocalWorld::variant("alb-low-traffic-artifact", |w| {
        w.replacen(
            "        slow_requests:\n",
            "        http_5xx_per_minute: {base: 0, ramp: {from: -30m, to: -5m, value: 3}}\n        slow_requests:\n",
            1,
        )
    });
    // The generator crashed on this group before it served anything.
    let world = LocalWorld::up(variant.to_str().unwrap());
    let event = world.deliver();
    assert!(event.exists(), "the alarm fires once the world is up");
}

#[test]
fn the_amp_workspace_refuses_an_unsigned_query_and_forwards_nothing() {
    let world = LocalWorld::up("alb-amp-worker-ceiling");
    let url = world.var("PROMETHEUS_URL").to_owned();
    let (base, workspace_path) = url.split_at(url.find("/workspaces/").unwrap());
    let answer = support::http(
        base,
        "GET",
        &format!("{workspace_path}/api/v1/query?query=up"),
        "",
    );
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("Missing Authentication Token"), "{answer}");
    // A signature by another secret is refused too.
    let now = chrono::Utc::now();
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential=testing/{}/eu-north-1/aps/aws4_request, SignedHeaders=host;x-amz-date, Signature={}",
        now.format("%Y%m%d"),
        "0".repeat(64)
    );
    let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
    let forged = support::http_with_headers(
        base,
        "GET",
        &format!("{workspace_path}/api/v1/query?query=up"),
        &[("Authorization", &authorization), ("X-Amz-Date", &amz_date)],
    );
    assert!(forged.starts_with("HTTP/1.1 403"), "{forged}");
    assert!(forged.contains("does not match"), "{forged}");
    let calls = support::http(base, "GET", "/_alarm_triage/calls", "");
    assert!(
        !calls.contains("\"signed\": true"),
        "nothing unsigned reached Prometheus: {calls}"
    );
}

#[tokio::test]
async fn cloudtrail_lookups_read_the_worlds_changes_through_the_rust_sdk() {
    use alarm_triage::adapters::cloudtrail::CloudTrailSource;
    use alarm_triage::evidence::AuditTrailSource;
    use alarm_triage::evidence::changes::TrailLookup;
    let world = LocalWorld::up("alb-health-check-path-edited");
    let trail = CloudTrailSource::new(aws_sdk_cloudtrail::Client::new(&world.sdk_config().await));
    let now = Utc::now();
    let page = trail
        .trail_events(
            TrailLookup::LoadBalancing,
            now - chrono::Duration::hours(7),
            now,
        )
        .await
        .unwrap();
    assert!(!page.truncated);
    let names: Vec<&str> = page.events.iter().map(|e| e.name.as_str()).collect();
    // Newest first: the health-check edit, then the engineer's read before it.
    assert_eq!(
        names[..2],
        ["ModifyTargetGroup", "DescribeTargetGroups"],
        "{names:?}"
    );
    assert!(
        page.events.windows(2).all(|pair| pair[0].at >= pair[1].at),
        "newest first"
    );
    let edit = &page.events[0];
    assert!(edit.record.as_deref().unwrap().contains("/readyz"));
    assert!(
        page.events
            .iter()
            .all(|e| e.source == "elasticloadbalancing.amazonaws.com"),
        "the lookup's one attribute filters by event source"
    );
    // The window bounds the lookup: from ten minutes before the world's
    // "now" it holds the edit (9 min before) alone, not the read (10 min 40 s).
    let world_now = chrono::DateTime::parse_from_rfc3339(world.facts["now"].as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc);
    let recent = trail
        .trail_events(
            TrailLookup::LoadBalancing,
            world_now - chrono::Duration::minutes(10),
            now,
        )
        .await
        .unwrap();
    let recent: Vec<&str> = recent.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(recent, ["ModifyTargetGroup"]);
}
