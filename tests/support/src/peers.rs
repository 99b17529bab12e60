//! The official SDK peers (pinned, installed by `scripts/install-peers.sh` into `.tools/peers/`;
//! Node 22 by `scripts/install-tools.sh`): their clients driven against a real `travel-server`
//! ([`clients`]), and their servers, which the client tests talk to ([`servers`]).

pub mod clients;
pub mod servers;
