//! The diagnose Lambda's handler, as a library so that tests (the fuzz suite
//! among them) drive exactly what the runtime drives.

#![recursion_limit = "256"] // the evidence futures nest deeply

pub mod handler;
