//! The diagnose Lambda: SNS (CloudWatch alarm) in, diagnosis out to SNS and/or SQS.

#![recursion_limit = "256"] // the evidence futures nest deeply

use alarm_triage::adapters::{AwsSources, publishing, with_call_limits};
use alarm_triage::config::Config;
use alarm_triage::telemetry::{LogFormat, init};
use diagnose::handler;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

/// Lambda bills memory and time: a faster allocator pays for itself on the
/// render path (the pipeline bench runs about twice as fast as with glibc's).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One thread: an invocation's calls are concurrent, not parallel, and each
/// worker thread of a multi-threaded runtime costs memory (peak RSS 39.6 ->
/// 35.3 MB in bench.sh).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    init(LogFormat::Json);
    let config = Config::from_env()?.require_destination()?;
    let aws = with_call_limits(aws_config::from_env(), config.budget.per_source)
        .region(aws_config::Region::new(config.region.clone()))
        .load()
        .await;
    let publishing = publishing(&aws, &config);
    let sources = AwsSources::from_config(&aws, &config);
    let state = handler::State::new(config, sources, publishing);
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        handler::handle(&state, event)
    }))
    .await
}
