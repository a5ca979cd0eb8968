//! The AWS adapters against the SDK's own mocks (aws-smithy-mocks): the real
//! clients, serialisers and retry layers, with the service's answers scripted.
//! Pagination, throttling and partial answers, which a local world makes
//! hard to provoke on purpose.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests fail loudly by design

use std::time::Duration;

use alarm_triage::adapters::cloudwatch::CloudWatchSource;
use alarm_triage::adapters::dynamodb::DynamoDbThreads;
use alarm_triage::adapters::elbv2::Elbv2Source;
use alarm_triage::adapters::sns::SnsPublisher;
use alarm_triage::adapters::sqs::SqsPublisher;
use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::error::Error;
use alarm_triage::evidence::model::MetricQuery;
use alarm_triage::evidence::{AlarmSource, LoadBalancerSource, MetricSource};
use alarm_triage::notify::thread::{Thread, ThreadKey, ThreadStore};
use aws_smithy_mocks::{RuleMode, mock, mock_client};
use aws_smithy_types::DateTime as SmithyTime;
use aws_smithy_types::error::ErrorMetadata;
use chrono::{TimeZone, Utc};

fn at(minute: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 10, minute, 0).unwrap()
}

fn smithy(t: chrono::DateTime<Utc>) -> SmithyTime {
    SmithyTime::from_secs(t.timestamp())
}

fn throttled() -> ErrorMetadata {
    ErrorMetadata::builder()
        .code("Throttling")
        .message("Rate exceeded")
        .build()
}

fn query(id: &str) -> MetricQuery {
    MetricQuery {
        id: id.to_owned(),
        namespace: "AWS/ApplicationELB".to_owned(),
        metric_name: "TargetResponseTime".to_owned(),
        dimensions: vec![],
        stat: "Average".to_owned(),
        period_seconds: 60,
    }
}

mod cloudwatch {
    use super::*;
    use aws_sdk_cloudwatch::config::retry::RetryConfig;
    use aws_sdk_cloudwatch::operation::describe_alarm_history::{
        DescribeAlarmHistoryError, DescribeAlarmHistoryOutput,
    };
    use aws_sdk_cloudwatch::operation::get_metric_data::{GetMetricDataError, GetMetricDataOutput};
    use aws_sdk_cloudwatch::types::{AlarmHistoryItem, MetricDataResult, StatusCode};

    fn result(id: &str, points: &[(u32, f64)], status: StatusCode) -> MetricDataResult {
        MetricDataResult::builder()
            .id(id)
            .set_timestamps(Some(points.iter().map(|(m, _)| smithy(at(*m))).collect()))
            .set_values(Some(points.iter().map(|(_, v)| *v).collect()))
            .status_code(status)
            .build()
    }

    #[tokio::test]
    async fn pages_of_metric_data_are_joined_per_query_in_time_order() {
        let first = mock!(aws_sdk_cloudwatch::Client::get_metric_data)
            .match_requests(|r| r.next_token().is_none())
            .then_output(|| {
                GetMetricDataOutput::builder()
                    .metric_data_results(result(
                        "a",
                        &[(3, 0.3), (1, 0.1)],
                        StatusCode::PartialData,
                    ))
                    .next_token("page-2")
                    .build()
            });
        let second = mock!(aws_sdk_cloudwatch::Client::get_metric_data)
            .match_requests(|r| r.next_token() == Some("page-2"))
            .then_output(|| {
                GetMetricDataOutput::builder()
                    .metric_data_results(result("a", &[(2, 0.2), (3, 0.3)], StatusCode::Complete))
                    .metric_data_results(result("stranger", &[(2, 9.0)], StatusCode::Complete))
                    .build()
            });
        let client = mock_client!(aws_sdk_cloudwatch, RuleMode::Sequential, [&first, &second]);
        let got = CloudWatchSource::new(client)
            .metric_data(&[query("a"), query("b")], at(0), at(10))
            .await
            .unwrap();
        assert_eq!(got.len(), 2, "one series per query, in query order");
        let minutes: Vec<f64> = got[0].points.iter().map(|(_, v)| *v).collect();
        assert_eq!(
            minutes,
            vec![0.1, 0.2, 0.3],
            "sorted, the repeated point once"
        );
        assert!(
            got[1].points.is_empty(),
            "a query CloudWatch did not answer is empty, not an error"
        );
        assert_eq!((first.num_calls(), second.num_calls()), (1, 1));
    }

    #[tokio::test]
    async fn a_throttled_call_is_retried_by_the_sdk_and_then_answers() {
        let rule = mock!(aws_sdk_cloudwatch::Client::get_metric_data)
            .sequence()
            .error(|| GetMetricDataError::generic(throttled()))
            .times(2)
            .output(|| {
                GetMetricDataOutput::builder()
                    .metric_data_results(result("a", &[(1, 1.0)], StatusCode::Complete))
                    .build()
            })
            .build();
        let client = mock_client!(aws_sdk_cloudwatch, RuleMode::Sequential, [&rule], |c| c
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(3)
                    .with_initial_backoff(Duration::from_millis(1))
            ));
        let got = CloudWatchSource::new(client)
            .metric_data(&[query("a")], at(0), at(10))
            .await
            .unwrap();
        assert_eq!(got[0].points.len(), 1);
        assert_eq!(rule.num_calls(), 3);
    }

    #[tokio::test]
    async fn throttling_that_outlasts_the_retries_is_a_retryable_gap_that_says_so() {
        let rule = mock!(aws_sdk_cloudwatch::Client::get_metric_data)
            .then_error(|| GetMetricDataError::generic(throttled()));
        let client = mock_client!(aws_sdk_cloudwatch, RuleMode::Sequential, [&rule], |c| c
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(3)
                    .with_initial_backoff(Duration::from_millis(1))
            ));
        let error = CloudWatchSource::new(client)
            .metric_data(&[query("a")], at(0), at(10))
            .await
            .unwrap_err();
        match error {
            Error::Source {
                reason, retryable, ..
            } => {
                assert!(retryable);
                assert!(reason.contains("throttled (Throttling)"), "{reason}");
            }
            other => panic!("not a source error: {other}"),
        }
        assert_eq!(rule.num_calls(), 3);
    }

    #[tokio::test]
    async fn more_than_500_queries_go_in_several_calls() {
        let rule =
            mock!(aws_sdk_cloudwatch::Client::get_metric_data).then_compute_output(|request| {
                let ids: Vec<String> = request
                    .metric_data_queries()
                    .iter()
                    .filter_map(|q| q.id().map(str::to_owned))
                    .collect();
                assert!(ids.len() <= 500, "{} queries in one call", ids.len());
                let mut out = GetMetricDataOutput::builder();
                for id in ids {
                    out = out.metric_data_results(result(&id, &[(1, 1.0)], StatusCode::Complete));
                }
                out.build()
            });
        let client = mock_client!(aws_sdk_cloudwatch, RuleMode::MatchAny, [&rule]);
        let queries: Vec<MetricQuery> = (0..1201).map(|i| query(&format!("q{i}"))).collect();
        let got = CloudWatchSource::new(client)
            .metric_data(&queries, at(0), at(10))
            .await
            .unwrap();
        assert_eq!(got.len(), 1201);
        assert!(got.iter().all(|s| s.points.len() == 1));
        assert_eq!(rule.num_calls(), 3);
    }

    #[tokio::test]
    async fn history_pages_become_one_ordered_history_and_a_denial_names_the_action() {
        let item = |minute: u32, old: &str, new: &str| {
            AlarmHistoryItem::builder()
                .timestamp(smithy(at(minute)))
                .history_data(format!(
                    r#"{{"version":"1.0","oldState":{{"stateValue":"{old}"}},"newState":{{"stateValue":"{new}"}}}}"#
                ))
                .build()
        };
        let first = mock!(aws_sdk_cloudwatch::Client::describe_alarm_history)
            .match_requests(|r| r.next_token().is_none())
            .then_output(move || {
                DescribeAlarmHistoryOutput::builder()
                    .alarm_history_items(item(5, "ALARM", "OK"))
                    .next_token("more")
                    .build()
            });
        let second = mock!(aws_sdk_cloudwatch::Client::describe_alarm_history)
            .match_requests(|r| r.next_token() == Some("more"))
            .then_output(move || {
                DescribeAlarmHistoryOutput::builder()
                    .alarm_history_items(item(2, "OK", "ALARM"))
                    .build()
            });
        let client = mock_client!(aws_sdk_cloudwatch, RuleMode::Sequential, [&first, &second]);
        let history = CloudWatchSource::new(client)
            .state_history("shop", at(0), at(10))
            .await
            .unwrap();
        let changes = history.changes_between(at(0), at(10));
        assert_eq!(changes.len(), 2, "{history:?}");
        assert!(changes[0].at < changes[1].at, "oldest first");

        let denied = mock!(aws_sdk_cloudwatch::Client::describe_alarm_history).then_error(|| {
            DescribeAlarmHistoryError::generic(
                ErrorMetadata::builder()
                    .code("AccessDenied")
                    .message("no")
                    .build(),
            )
        });
        let client = mock_client!(aws_sdk_cloudwatch, RuleMode::Sequential, [&denied]);
        let error = CloudWatchSource::new(client)
            .state_history("shop", at(0), at(10))
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("cloudwatch:DescribeAlarmHistory"),
            "{error}"
        );
        assert!(!error.is_retryable());
    }
}

mod elbv2 {
    use super::*;
    use aws_sdk_elasticloadbalancingv2::operation::describe_tags::DescribeTagsOutput;
    use aws_sdk_elasticloadbalancingv2::operation::describe_target_groups::{
        DescribeTargetGroupsError, DescribeTargetGroupsOutput,
    };
    use aws_sdk_elasticloadbalancingv2::types::{Tag, TagDescription, TargetGroup, TargetTypeEnum};

    const LB: &str = "arn:aws:elasticloadbalancing:eu-west-1:1:loadbalancer/app/shop/1";

    fn group(name: &str) -> TargetGroup {
        TargetGroup::builder()
            .target_group_arn(format!(
                "arn:aws:elasticloadbalancing:eu-west-1:1:targetgroup/{name}/0a"
            ))
            .target_group_name(name)
            .target_type(TargetTypeEnum::Ip)
            .port(8080)
            .build()
    }

    #[tokio::test]
    async fn target_groups_come_from_every_page_and_are_kept_warm() {
        let first = mock!(aws_sdk_elasticloadbalancingv2::Client::describe_target_groups)
            .match_requests(|r| r.marker().is_none())
            .then_output(|| {
                DescribeTargetGroupsOutput::builder()
                    .target_groups(group("web"))
                    .next_marker("m2")
                    .build()
            });
        let second = mock!(aws_sdk_elasticloadbalancingv2::Client::describe_target_groups)
            .match_requests(|r| r.marker() == Some("m2"))
            .then_output(|| {
                DescribeTargetGroupsOutput::builder()
                    .target_groups(group("api"))
                    .build()
            });
        let client = mock_client!(
            aws_sdk_elasticloadbalancingv2,
            RuleMode::MatchAny,
            [&first, &second]
        );
        let source = Elbv2Source::new(client);
        let groups = source.target_groups(LB).await.unwrap().unwrap();
        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["api", "web"]);
        assert_eq!(groups[1].dimension, "targetgroup/web/0a");
        assert_eq!(groups[1].port, Some(8080));
        // A second alarm on the same load balancer within the minute asks nothing.
        source.target_groups(LB).await.unwrap();
        assert_eq!((first.num_calls(), second.num_calls()), (1, 1));
    }

    #[tokio::test]
    async fn a_deleted_load_balancer_has_no_target_groups_rather_than_an_error() {
        let rule = mock!(aws_sdk_elasticloadbalancingv2::Client::describe_target_groups)
            .then_error(|| {
                DescribeTargetGroupsError::generic(
                    ErrorMetadata::builder()
                        .code("LoadBalancerNotFound")
                        .message("gone")
                        .build(),
                )
            });
        let client = mock_client!(
            aws_sdk_elasticloadbalancingv2,
            RuleMode::Sequential,
            [&rule]
        );
        assert_eq!(
            Elbv2Source::new(client).target_groups(LB).await.unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn tags_are_asked_twenty_arns_at_a_time() {
        let rule = mock!(aws_sdk_elasticloadbalancingv2::Client::describe_tags)
            .then_compute_output(|request| {
                let arns = request.resource_arns();
                assert!(arns.len() <= 20, "{} ARNs in one call", arns.len());
                let mut out = DescribeTagsOutput::builder();
                for arn in arns {
                    out = out.tag_descriptions(
                        TagDescription::builder()
                            .resource_arn(arn)
                            .tags(
                                Tag::builder()
                                    .key("elbv2.k8s.aws/cluster")
                                    .value("prod")
                                    .build(),
                            )
                            .build(),
                    );
                }
                out.build()
            });
        let client = mock_client!(aws_sdk_elasticloadbalancingv2, RuleMode::MatchAny, [&rule]);
        let arns: Vec<String> = (0..45).map(|i| format!("arn:tg{i}")).collect();
        let tags = Elbv2Source::new(client).tags(&arns).await.unwrap();
        assert_eq!(tags.len(), 45);
        assert_eq!(tags["arn:tg44"]["elbv2.k8s.aws/cluster"], "prod");
        assert_eq!(rule.num_calls(), 3);
    }
}

fn diagnosis() -> Diagnosis {
    let path = format!(
        "{}/tests/fixtures/diagnosis-alb-sustained-hot-pod.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

mod publishers {
    use super::*;
    use aws_sdk_sns::operation::publish::{PublishError, PublishOutput};
    use aws_sdk_sqs::operation::send_message::SendMessageOutput;

    #[tokio::test]
    async fn sns_gets_the_email_and_json_members_and_fifo_topics_the_dedup_id() {
        let outgoing = alarm_triage::publish::prepare(&diagnosis()).unwrap();
        let id = outgoing.diagnosis_id.clone();
        let rule = mock!(aws_sdk_sns::Client::publish)
            .match_requests(move |r| {
                let message: serde_json::Value =
                    serde_json::from_str(r.message().unwrap_or_default()).unwrap();
                r.message_structure() == Some("json")
                    && message["default"].as_str().is_some_and(|d| d.contains(&id))
                    && message["email"].is_string()
                    && r.message_deduplication_id() == Some(id.as_str())
                    && r.message_group_id().is_some()
            })
            .then_output(|| PublishOutput::builder().message_id("m-1").build());
        let client = mock_client!(aws_sdk_sns, RuleMode::Sequential, [&rule]);
        let publisher = SnsPublisher::new(client, "arn:aws:sns:eu-west-1:1:diagnoses.fifo".into());
        assert_eq!(publisher.publish(&outgoing).await.unwrap(), "m-1");
    }

    #[tokio::test]
    async fn a_refused_publish_fails_with_the_topic_named() {
        let outgoing = alarm_triage::publish::prepare(&diagnosis()).unwrap();
        let rule = mock!(aws_sdk_sns::Client::publish).then_error(|| {
            PublishError::generic(
                ErrorMetadata::builder()
                    .code("AuthorizationError")
                    .message("not allowed")
                    .build(),
            )
        });
        let client = mock_client!(aws_sdk_sns, RuleMode::Sequential, [&rule]);
        let topic = "arn:aws:sns:eu-west-1:1:diagnoses";
        let error = SnsPublisher::new(client, topic.into())
            .publish(&outgoing)
            .await
            .unwrap_err();
        assert!(error.to_string().contains(topic), "{error}");
    }

    #[tokio::test]
    async fn sqs_gets_the_json_diagnosis_as_the_body() {
        let outgoing = alarm_triage::publish::prepare(&diagnosis()).unwrap();
        let json = outgoing.json.clone();
        let rule = mock!(aws_sdk_sqs::Client::send_message)
            .match_requests(move |r| {
                r.message_body() == Some(json.as_str()) && r.message_group_id().is_none()
            })
            .then_output(|| SendMessageOutput::builder().message_id("q-1").build());
        let client = mock_client!(aws_sdk_sqs, RuleMode::Sequential, [&rule]);
        let publisher = SqsPublisher::new(
            client,
            "https://sqs.eu-west-1.amazonaws.com/1/diagnoses".into(),
        );
        assert_eq!(publisher.send(&outgoing).await.unwrap(), "q-1");
    }
}

mod thread_store {
    use super::*;
    use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
    use aws_sdk_dynamodb::operation::put_item::{PutItemError, PutItemOutput};
    use aws_sdk_dynamodb::types::AttributeValue;

    fn thread() -> Thread {
        Thread {
            channel_id: "C1".into(),
            ts: "1700000000.000100".into(),
            started_at: at(0),
            expires_at: at(0) + chrono::Duration::hours(24),
            incident: None,
        }
    }

    #[tokio::test]
    async fn a_thread_is_remembered_once_and_read_back() {
        let first = mock!(aws_sdk_dynamodb::Client::put_item)
            .match_requests(|r| {
                r.condition_expression()
                    .is_some_and(|c| c.contains("attribute_not_exists"))
            })
            .then_output(|| PutItemOutput::builder().build());
        let taken = mock!(aws_sdk_dynamodb::Client::put_item).then_error(|| {
            PutItemError::generic(
                ErrorMetadata::builder()
                    .code("ConditionalCheckFailedException")
                    .message("exists")
                    .build(),
            )
        });
        let item = thread();
        let read = mock!(aws_sdk_dynamodb::Client::get_item).then_output(move || {
            GetItemOutput::builder()
                .item("thread_key", AttributeValue::S("shop|#alerts".into()))
                .item("channel_id", AttributeValue::S(item.channel_id.clone()))
                .item("ts", AttributeValue::S(item.ts.clone()))
                .item(
                    "started_at",
                    AttributeValue::N(item.started_at.timestamp().to_string()),
                )
                .item(
                    "expires_at",
                    AttributeValue::N(item.expires_at.timestamp().to_string()),
                )
                .build()
        });
        let client = mock_client!(
            aws_sdk_dynamodb,
            RuleMode::Sequential,
            [&first, &taken, &read]
        );
        let store = DynamoDbThreads::from_client(client, "threads".into());
        let key = ThreadKey::new("shop", "#alerts");
        assert!(store.remember(&key, &thread(), at(1)).await.unwrap());
        assert!(
            !store.remember(&key, &thread(), at(2)).await.unwrap(),
            "the second writer loses"
        );
        assert_eq!(store.find(&key).await.unwrap(), Some(thread()));
    }

    #[tokio::test]
    async fn a_thread_record_missing_a_field_is_an_error_naming_it() {
        let read = mock!(aws_sdk_dynamodb::Client::get_item).then_output(|| {
            GetItemOutput::builder()
                .item("thread_key", AttributeValue::S("shop|#alerts".into()))
                .item("channel_id", AttributeValue::S("C1".into()))
                .build()
        });
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&read]);
        let store = DynamoDbThreads::from_client(client, "threads".into());
        let error = store
            .find(&ThreadKey::new("shop", "#alerts"))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("ts"), "{error}");
    }

    #[tokio::test]
    async fn a_transition_is_claimed_once_and_a_lost_release_is_no_error() {
        use alarm_triage::adapters::dynamodb::DynamoDbTransitions;
        use alarm_triage::publish::once::TransitionLedger;
        use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
        let condition_failed = || {
            ErrorMetadata::builder()
                .code("ConditionalCheckFailedException")
                .message("exists")
                .build()
        };
        let claimed = mock!(aws_sdk_dynamodb::Client::put_item)
            .match_requests(|r| {
                r.condition_expression()
                    .is_some_and(|c| c.contains("attribute_not_exists") && c.contains(":stale"))
            })
            .then_output(|| PutItemOutput::builder().build());
        let held = mock!(aws_sdk_dynamodb::Client::put_item)
            .then_error(move || PutItemError::generic(condition_failed()));
        let gone = mock!(aws_sdk_dynamodb::Client::delete_item)
            .then_error(move || DeleteItemError::generic(condition_failed()));
        let throttled = mock!(aws_sdk_dynamodb::Client::put_item).then_error(|| {
            PutItemError::generic(
                ErrorMetadata::builder()
                    .code("ProvisionedThroughputExceededException")
                    .message("slow down")
                    .build(),
            )
        });
        let client = mock_client!(
            aws_sdk_dynamodb,
            RuleMode::Sequential,
            [&claimed, &held, &gone, &throttled]
        );
        let ledger = DynamoDbTransitions::from_client(client, "transitions".into());
        assert!(ledger.claim("dx-1", at(0)).await.unwrap());
        assert!(
            !ledger.claim("dx-1", at(1)).await.unwrap(),
            "the other delivery stands down"
        );
        ledger.release("dx-1").await.unwrap();
        let error = ledger.claim("dx-2", at(2)).await.unwrap_err().to_string();
        assert!(
            error.contains("dynamodb") && error.contains("ProvisionedThroughputExceeded"),
            "{error}"
        );
    }
}
