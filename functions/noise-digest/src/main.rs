//! The digest Lambda, on a schedule (EventBridge Scheduler): reads every
//! metric alarm's last days, ranks the noisy ones and posts the digest to
//! one Slack channel. Read-only, like everything else.

mod handler;

use alarm_triage::adapters::cloudwatch::CloudWatchSource;
use alarm_triage::adapters::dynamodb::DynamoDbThreads;
use alarm_triage::adapters::secrets::SecretReader;
use alarm_triage::adapters::with_call_limits;
use alarm_triage::config::DigestConfig;
use alarm_triage::telemetry::{LogFormat, init};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    init(LogFormat::Json);
    let config = DigestConfig::from_env()?;
    let aws = with_call_limits(aws_config::from_env(), std::time::Duration::from_secs(20))
        .region(aws_config::Region::new(config.region.clone()))
        .load()
        .await;
    let state = handler::State {
        cloudwatch: CloudWatchSource::new(aws_sdk_cloudwatch::Client::new(&aws)),
        threads: config
            .thread_table
            .clone()
            .map(|table| DynamoDbThreads::new(&aws, table)),
        secrets: SecretReader::new(&aws),
        config,
        poster: tokio::sync::OnceCell::new(),
    };
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        handler::handle(&state, event)
    }))
    .await
}
