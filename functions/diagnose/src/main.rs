//! The diagnose Lambda: SNS (CloudWatch alarm) in, diagnosis out.

mod handler;

/// Lambda bills memory and time: a faster allocator pays for itself on the render path.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use alarm_triage::adapters::cloudwatch::CloudWatchSource;
use alarm_triage::config::Config;
use alarm_triage::telemetry::{LogFormat, init};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    init(LogFormat::Json);
    let config = Config::from_env()?;
    let aws = aws_config::from_env()
        .region(aws_config::Region::new(config.region.clone()))
        .load()
        .await;
    let state = handler::State::new(
        config,
        CloudWatchSource::new(aws_sdk_cloudwatch::Client::new(&aws)),
    );
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        handler::handle(&state, event)
    }))
    .await
}
