//! The pure core of alarm-triage: the alarm as it arrives (intake), its
//! facts parsed once, the evidence model and the plan of what to read, the
//! findings, classification, severity, next steps, the diagnosis and its
//! renderings. Synchronous functions over plain data: no async runtime, no
//! AWS SDK, no Kubernetes client, no clock (`now` is a parameter) and no
//! environment. This crate's dependencies are what keeps it so: the reading
//! and the publishing live in the `alarm-triage` crate above it.

pub mod alarm;
pub mod changes;
#[cfg(feature = "charts")]
pub mod charts;
pub mod classify;
pub mod diagnosis;
pub mod digest;
pub mod error;
pub mod evidence;
pub mod feedback;
pub mod findings;
#[cfg(any(test, feature = "test-util"))]
pub mod fixtures;
pub mod history;
pub mod instants;
pub mod intake;
pub mod logs;
pub mod next_steps;
pub mod render;
pub mod series;
pub mod severity;
pub mod suspects;
pub mod triage;

pub use error::{Error, Result};
