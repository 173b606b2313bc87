//! Opening what a `--connection` string names, for the data commands.

use std::sync::Arc;

use clap::Args;

use crate::connect::connect;
use crate::data::{DataClient, DirectoryAdmin, ShardAdmin};
use crate::error::{Error, Result};
use crate::options::ConnectionOptions;
use crate::routing::RouteContext;

/// The `--connection` argument and an optional route given on the command line.
#[derive(Debug, Args)]
pub struct ConnectionArgs {
    /// A connection string: `Data Source=master.db` for a local master, or
    /// `Endpoint=http://127.0.0.1:61818;Transport=Grpc` for a daemon (URL forms work too).
    #[arg(long, short = 'c', env = "SHARDLITE_CONNECTION")]
    pub connection: String,
}

/// A route given with `--keyspace` and `--key` (overrides the connection string's).
#[derive(Debug, Args)]
pub struct RouteArgs {
    /// The route keyspace.
    #[arg(long, requires = "key")]
    pub keyspace: Option<String>,
    /// The route key.
    #[arg(long, requires = "keyspace")]
    pub key: Option<String>,
}

impl RouteArgs {
    /// The route from the flags, if given.
    pub fn route(&self) -> Result<Option<RouteContext>> {
        match (&self.keyspace, &self.key) {
            (Some(keyspace), Some(key)) => RouteContext::new(keyspace, key).map(Some),
            _ => Ok(None),
        }
    }
}

/// What a connection string opened.
pub struct Opened {
    /// The connection string's `Data Source`, for messages.
    data_source: Option<String>,
    /// Shard-admin operations, when the target is sharded.
    admin: Option<Arc<dyn ShardAdmin>>,
    /// Shard directories, when the target is sharded.
    directories: Option<Arc<dyn DirectoryAdmin>>,
    /// Data operations on the route, on a plain file, or on a daemon; `None` for a master file
    /// opened without a route (see [`data`](Self::data)).
    data: Option<Arc<dyn DataClient>>,
    /// The route the data client is bound to, if any.
    pub route: Option<RouteContext>,
    /// The sharded client, when a master catalog was opened in this process.
    pub sharded: Option<crate::client::ShardedClient>,
}

impl Opened {
    /// Data operations on the route, on a plain file, or on a daemon (which answers "route
    /// required" itself). A master file opened in this process without a route has none: fails
    /// with [`Error::RouteRequired`].
    pub fn data(&self) -> Result<&Arc<dyn DataClient>> {
        self.data.as_ref().ok_or(Error::RouteRequired)
    }

    /// Whether the connection opened a master file in this process (rather than a daemon).
    pub fn is_local(&self) -> bool {
        self.data_source.is_some()
    }

    /// The shard directories, when the target is sharded.
    pub fn directories(&self) -> Option<Arc<dyn DirectoryAdmin>> {
        self.directories.clone()
    }

    /// The shard-admin client, or an error saying the target is one plain database.
    pub fn admin(&self) -> Result<&Arc<dyn ShardAdmin>> {
        self.admin.as_ref().ok_or_else(|| {
            let detail = match &self.data_source {
                Some(path) => format!(
                    "'{path}' is a plain database without a shard map; shard commands need a master \
                     catalog: store a map in it with `shardlite seed --master {path} --map MAP.json`"
                ),
                None => "the daemon serves a plain database without a shard map; shard commands need a \
                         daemon serving a master catalog"
                    .to_owned(),
            };
            Error::invalid_argument("--connection", detail)
        })
    }
}

/// Opens the target of `args`, bound to `route` (flags) or the string's own route.
pub async fn open(args: &ConnectionArgs, route: Option<RouteContext>) -> Result<Opened> {
    let mut options = ConnectionOptions::parse(&args.connection)?;
    if let Some(route) = route {
        options = options.with_route(route);
    }
    // A command-line typo must not leave an empty database behind.
    if let Some(path) = options.data_source()
        && !crate::catalog::CatalogLocation::is_url(path)
        && !std::path::Path::new(path).exists()
    {
        return Err(Error::invalid_argument(
            "--connection",
            format!(
                "Data Source '{path}' does not exist: create a master catalog with `shardlite seed \
                 --master {path} --map MAP.json`, or get a ready one with \
                 `shardlite demo demo` (it keeps demo/shards/master.db)"
            ),
        ));
    }
    let connected = connect(&options).await?;
    let sharded = match &connected {
        crate::connect::ConnectedClient::Sharded { client, .. } => Some(client.clone()),
        crate::connect::ConnectedClient::Shard { client, .. } => Some(client.sharded().clone()),
        _ => None,
    };
    Ok(Opened {
        sharded,
        data_source: options.data_source().map(str::to_owned),
        admin: connected.admin(),
        directories: connected.directories(),
        route: connected.route().cloned(),
        data: connected.into_client().ok(),
    })
}
