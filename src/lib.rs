//! alarm-triage: diagnoses CloudWatch alarms for services on EKS behind AWS
//! load balancers, and proposes next steps. It never changes anything.
//!
//! The pure core (intake, alarm facts, the evidence model, findings,
//! classification, the diagnosis and its renderings) is the
//! `alarm-triage-core` crate, re-exported here under the same paths. This
//! crate adds the edges: the ports ([`evidence::ports`]) and [`adapters`]
//! that turn AWS and Kubernetes into the core's plain data, [`gathering`]
//! that runs the adapters concurrently under a deadline, [`publish`] and
//! [`notify`], and [`pipeline`] that ties it together for the Lambda
//! functions and the `alarm-triage` CLI.

#[cfg(feature = "charts")]
pub use alarm_triage_core::charts;
pub use alarm_triage_core::{
    alarm, changes, classify, diagnosis, digest, findings, history, instants, intake, next_steps,
    render, series, severity, triage,
};

/// The core's evidence model, and the ports the adapters implement.
pub mod evidence {
    pub use alarm_triage_core::evidence::*;

    #[cfg(any(test, feature = "test-util"))]
    pub mod fake;
    pub mod ports;

    pub use ports::*;
}

pub mod adapters;
pub mod config;
pub mod error;
pub mod feedback;
pub mod gathering;
pub mod invocation;
pub mod noise_survey;
pub mod notify;
pub mod pipeline;
pub mod publish;
pub mod telemetry;

pub use alarm_triage_core::Error as CoreError;
pub use error::{Error, Result};
