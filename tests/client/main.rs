//! The client library: the driver in each era, calls run as tasks, the spec's own examples read with
//! the client's parsers, and the example application built on it.

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking, with the reason")]

mod book_trip_app;
mod fake_server;
/// The driver: what every retry or answer carries, and what it refuses, in each era.
mod driver {
    mod era_2025;
    mod era_2026;
}
mod spec_examples;
mod tasks;
