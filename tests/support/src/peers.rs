//! The official SDK peers (pinned, installed by `scripts/install-peers.sh` into `.tools/peers/`;
//! Node 22 by `scripts/install-tools.sh`): their clients driven against a real `travel-server`
//! ([`clients`]), their servers, which the client tests talk to ([`servers`]), and the MCP
//! Inspector, a host whose web UI draws the forms, driven in a headless Chromium ([`inspector`]);
//! and a real OpenID provider ([`oidc`]).

pub mod clients;
pub mod inspector;
pub mod oidc;
pub mod servers;
