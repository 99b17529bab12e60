//! The end-to-end bench server: `ask_name` (one form, two rounds) and `plain`, engine handlers on
//! the runtime's rmcp adapter, stateless Streamable HTTP at `/mcp`.
//!
//! ```text
//! bench-server [--listen 127.0.0.1:8931] [--threads N]   (N tokio worker threads; default 2)
//! ```

use elicit_benches::e2e::bench_server;

const USAGE: &str = "usage: bench-server [--listen ADDR] [--threads N]";

fn main() {
    let (mut listen, mut threads) = ("127.0.0.1:8931".to_owned(), 2usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next();
        match (flag.as_str(), value) {
            ("--listen", Some(value)) => listen = value,
            ("--threads", Some(value)) => match value.parse() {
                Ok(n) if n > 0 => threads = n,
                _ => exit(&format!("--threads {value}: give a positive number\n{USAGE}")),
            },
            _ => exit(USAGE),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build();
    let runtime = runtime.unwrap_or_else(|e| exit(&format!("tokio: {e}")));
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&listen).await?;
        eprintln!("bench-server: listening on http://{}/mcp ({threads} threads)", listener.local_addr()?);
        axum::serve(listener, bench_server().http_router(&[]))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
    });
    if let Err(error) = served {
        exit(&format!("bench-server: {error}"));
    }
}

fn exit(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}
