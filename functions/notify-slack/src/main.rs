//! The notify-slack Lambda: diagnoses from the diagnosis topic, posted to Slack.

mod handler;

use alarm_triage::adapters::secrets::SecretReader;
use alarm_triage::adapters::with_call_limits;
use alarm_triage::config::NotifyConfig;
use alarm_triage::telemetry::{LogFormat, init};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    init(LogFormat::Json);
    let config = NotifyConfig::from_env()?;
    let aws = with_call_limits(aws_config::from_env(), config.request_timeout)
        .region(aws_config::Region::new(config.region.clone()))
        .load()
        .await;
    let state = handler::State::new(config, SecretReader::new(&aws), aws);
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        handler::handle(&state, event)
    }))
    .await
}
