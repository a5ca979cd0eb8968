//! alarm-triage: diagnoses CloudWatch alarms for services on EKS behind AWS
//! load balancers, and proposes next steps. It never changes anything.
//!
//! The core (intake, classification, findings, diagnosis, renderings) is pure
//! and synchronous; [`adapters`] turn AWS into plain data ([`evidence`] is
//! that data and the ports); [`gathering`] runs the adapters concurrently
//! under a deadline; [`pipeline`] ties it together
//! for the Lambda functions and the `alarm-triage` CLI.

pub mod adapters;
pub mod alarm;
#[cfg(feature = "charts")]
pub mod charts;
pub mod classify;
pub mod config;
pub mod diagnosis;
pub mod error;
pub mod evidence;
pub mod findings;
pub mod gathering;
pub mod history;
pub mod instants;
pub mod intake;
pub mod invocation;
pub mod next_steps;
pub mod notify;
pub mod pipeline;
pub mod publish;
pub mod render;
pub mod series;
pub mod severity;
pub mod telemetry;
pub mod triage;

pub use error::{Error, Result};
