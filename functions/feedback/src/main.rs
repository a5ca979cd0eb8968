//! The feedback Lambda, behind a function URL: Slack's interactivity
//! requests (verdict clicks, the what-was-it form) in, an HTTP answer out.

mod handler;

use alarm_triage::adapters::dynamodb::feedback::DynamoDbFeedback;
use alarm_triage::adapters::secrets::SecretReader;
use alarm_triage::adapters::with_call_limits;
use alarm_triage::config::FeedbackConfig;
use alarm_triage::telemetry::{LogFormat, init};
use aws_lambda_events::event::lambda_function_urls::LambdaFunctionUrlRequest;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    init(LogFormat::Json);
    let config = FeedbackConfig::from_env()?;
    // Slack waits 3 s for the answer: AWS calls get a short leash.
    let aws = with_call_limits(
        aws_config::from_env(),
        std::time::Duration::from_millis(1_500),
    )
    .region(aws_config::Region::new(config.region.clone()))
    .load()
    .await;
    let state = handler::State {
        store: DynamoDbFeedback::new(&aws, config.table.clone()),
        secrets: SecretReader::new(&aws),
        config,
        slack: tokio::sync::OnceCell::new(),
    };
    run(service_fn(
        |event: LambdaEvent<LambdaFunctionUrlRequest>| handler::handle(&state, event),
    ))
    .await
}
