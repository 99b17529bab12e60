//! Where the store's commands go: one Redis (a [`ConnectionManager`]) or a Redis Cluster (the
//! `redis` crate's async cluster connection, which follows `MOVED` and `ASK` and reconnects), the
//! store URL that names either, and the replica acknowledgement (`WAIT`) a write may wait for.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, Slot as KeySlot, SlotAddr};
use redis::{Client, Cmd, Pipeline, RedisError, RedisFuture, Value};

use super::super::StoreError;

/// The scheme of a cluster's store URL: `redis+cluster://[:PASSWORD@]HOST:PORT[,HOST:PORT…]`.
pub(super) const CLUSTER_SCHEME: &str = "redis+cluster://";

/// What a store URL names.
pub(super) struct Target {
    /// `redis://` URLs: the one server, or each cluster node given.
    pub(super) nodes: Vec<String>,
    pub(super) cluster: bool,
    /// `redis at HOST:PORT` or `redis cluster at HOST:PORT,…`, for messages (never the password).
    pub(super) endpoint: String,
}

fn invalid(detail: String) -> StoreError {
    StoreError::Invalid { detail }
}

/// `HOST:PORT` of a `redis://` URL, refusing anything else. Never echoes the URL (it may carry a
/// password).
fn host_port(url: &str) -> Result<String, StoreError> {
    let parsed = url::Url::parse(url).map_err(|e| invalid(format!("the store URL is not a redis URL: {e}")))?;
    if parsed.scheme() != "redis" {
        return Err(invalid(format!(
            "`{}://…` is not supported: give redis://HOST:PORT or {CLUSTER_SCHEME}HOST:PORT,… (TLS is not built in)",
            parsed.scheme()
        )));
    }
    let host = parsed.host_str().unwrap_or("localhost");
    Ok(format!("{host}:{}", parsed.port().unwrap_or(6379)))
}

/// Reads a store URL: `redis://…` (one server) or `redis+cluster://…` (a cluster, any of its
/// nodes; the client learns the others from them).
pub(super) fn target(url: &str) -> Result<Target, StoreError> {
    let Some(rest) = url.strip_prefix(CLUSTER_SCHEME) else {
        let endpoint = format!("redis at {}", host_port(url)?);
        return Ok(Target { nodes: vec![url.to_owned()], cluster: false, endpoint });
    };
    // `[userinfo@]node,node…`: the credentials, when given, are every node's.
    let (userinfo, hosts) = match rest.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), rest),
    };
    let hosts = hosts.trim_end_matches('/');
    let nodes: Vec<String> =
        hosts.split(',').filter(|h| !h.is_empty()).map(|host| format!("redis://{userinfo}{host}")).collect();
    if nodes.is_empty() {
        return Err(invalid(format!("{CLUSTER_SCHEME} needs at least one HOST:PORT")));
    }
    let described = nodes.iter().map(|node| host_port(node)).collect::<Result<Vec<_>, _>>()?;
    if nodes.iter().any(|node| url::Url::parse(node).is_ok_and(|u| !matches!(u.path(), "" | "/" | "/0"))) {
        return Err(invalid("a cluster has one database: give no /DB".to_owned()));
    }
    Ok(Target { nodes, cluster: true, endpoint: format!("redis cluster at {}", described.join(",")) })
}

/// A connection to one Redis or to a cluster; cheap to clone (both multiplex).
#[derive(Clone)]
pub(super) enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// Opens the connection `target` names, lazily for one server (the first command connects).
pub(super) async fn open(target: &Target, timeout: Duration) -> Result<(Connection, Vec<Client>), String> {
    let clients = target.nodes.iter().map(|node| Client::open(node.as_str())).collect::<Result<Vec<_>, _>>();
    let clients = clients.map_err(|e| format!("cannot use the URL: {e}"))?;
    let connect_timeout = timeout.min(Duration::from_secs(1));
    if !target.cluster {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(timeout))
            // Few, short reconnection attempts: an outage must surface as an error within the
            // command timeout, not after the crate's default backoff of several seconds.
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        let client = clients.first().cloned().ok_or("no node")?;
        let connection = ConnectionManager::new_lazy_with_config(client, config).map_err(|e| e.to_string())?;
        return Ok((Connection::Single(connection), clients));
    }
    let cluster = ClusterClientBuilder::new(target.nodes.iter().map(String::as_str))
        .connection_timeout(connect_timeout)
        .response_timeout(timeout)
        // A failover moves slots within seconds: the client retries `MOVED`, `TRYAGAIN` and lost
        // nodes with a short backoff, inside the store's own bound per operation.
        .retries(6)
        .min_retry_wait(20)
        .max_retry_wait(400)
        .build()
        .map_err(|e| format!("cannot use the URL: {e}"))?;
    let connection = tokio::time::timeout(timeout, cluster.get_async_connection())
        .await
        .map_err(|_| format!("no node answered within {timeout:?}"))?
        .map_err(|e| format!("no node answered: {e}"))?;
    Ok((Connection::Cluster(connection), clients))
}

impl Connection {
    /// Waits until `replicas` replicas acknowledged every write this connection sent to the node
    /// holding `key` (at most `within`); how many did. On a cluster the `WAIT` goes to that
    /// key's master: the node the write went to.
    pub(super) async fn wait_replicas(
        &mut self,
        key: &str,
        replicas: u32,
        within: Duration,
    ) -> Result<u32, RedisError> {
        let mut wait = redis::cmd("WAIT");
        wait.arg(replicas).arg(u64::try_from(within.as_millis()).unwrap_or(u64::MAX).max(1));
        let acked = match self {
            Connection::Single(c) => wait.query_async(c).await?,
            Connection::Cluster(c) => {
                let route = Route::with_slot(KeySlot::for_key(key), SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                redis::from_redis_value(c.route_command(wait, routing).await?)?
            }
        };
        Ok(acked)
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}
