//! Several `travel-server` instances: sharing sealing keys, sharing one Redis completion store (in
//! each era), the store contract every store keeps, exactly-once across instances, the task records
//! every store keeps, one instance killed and restarted at each step of a flow (crash), and the
//! store on a Redis Cluster through a failover. Each test that needs Redis starts its own
//! `redis-server` (or cluster of them).

#![allow(clippy::panic, clippy::unwrap_used, reason = "a test reports a failure by panicking, with the reason")]

mod cluster;
mod crash;
mod exactly_once;
mod shared_keys;
/// Two instances sharing one Redis serve each other's rounds and payment pages, in each era.
mod shared_store {
    mod era_2025;
    mod era_2026;
}
mod store_contract;
mod task_records_contract;
