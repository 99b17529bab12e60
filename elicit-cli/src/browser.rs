//! Opening a URL the user consented to, and waiting politely while its out-of-band step is
//! pending.

use std::process::Stdio;
use std::time::Duration;

use elicit_runtime::client::CheckedUrl;

/// How long an opener command may run before it is taken to have opened the page (browsers that
/// stay in the foreground never exit on their own).
const OPENER_GRACE: Duration = Duration::from_secs(10);

/// Opens `url` with `browser` (run as `CMD URL`) or with the system's opener. Neither goes
/// through a shell or `cmd.exe`: the command is split into words here and run directly, with the
/// URL as its last argument, whole; the system's opener is the `opener` crate (`ShellExecuteW`
/// on Windows, `open` on macOS, `xdg-open` elsewhere, the URL as one argument).
pub(crate) async fn open(browser: Option<&str>, url: &CheckedUrl) -> Result<(), String> {
    let Some(cmd) = browser else { return open_with_system(&url.url).await };
    let (program, args) = browser_argv(cmd, &url.url)?;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(false);
    let mut child = command.spawn().map_err(|e| format!("cannot start the browser: {e}"))?;
    match tokio::time::timeout(OPENER_GRACE, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("the browser command failed ({status})")),
        Ok(Err(e)) => Err(format!("the browser command failed: {e}")),
        // Still running: a browser in the foreground. It has the page.
        Err(_) => Ok(()),
    }
}

/// The program and arguments that open `url` with the `--browser` command `cmd`: `cmd` is split
/// into words with POSIX quoting (`'…'`, `"…"`, `\`) so a path with spaces can be given, but
/// nothing else a shell would do happens (no variables, globs, pipes or `;`), and `url` is
/// appended as one argument, whatever it contains.
fn browser_argv(cmd: &str, url: &str) -> Result<(String, Vec<String>), String> {
    let words = shlex::split(cmd).ok_or_else(|| format!("--browser: unbalanced quotes in `{cmd}`"))?;
    let mut words = words.into_iter();
    let program = words.next().ok_or("--browser: the command is empty")?;
    let args = words.chain(std::iter::once(url.to_owned())).collect();
    Ok((program, args))
}

/// Opens `url` with the system's opener, in a blocking task bounded like a `--browser` command.
async fn open_with_system(url: &str) -> Result<(), String> {
    let url = url.to_owned();
    let opening = tokio::task::spawn_blocking(move || opener::open(url));
    match tokio::time::timeout(OPENER_GRACE, opening).await {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => Err(format!("cannot open the browser: {e}")),
        Ok(Err(e)) => Err(format!("cannot open the browser: {e}")),
        // Still running: the opener waits for the browser it started. It has the page.
        Err(_) => Ok(()),
    }
}

/// The delay before the `retries`-th automatic retry of a pending step: 1, 2, 4, 8 then 15 s.
pub(crate) fn backoff(retries: u32) -> Duration {
    let seconds = 1u64 << retries.saturating_sub(1).min(4);
    Duration::from_secs(seconds.min(15))
}

/// The URL with its host emphasised for a terminal (bold, underlined), or as-is otherwise.
pub(crate) fn highlighted(url: &CheckedUrl, ansi: bool) -> String {
    let range = url.host_range.clone();
    match (ansi, url.url.get(..range.start), url.url.get(range.clone()), url.url.get(range.end..)) {
        (true, Some(before), Some(host), Some(after)) => format!("{before}\x1b[1;4m{host}\x1b[0m{after}"),
        _ => url.url.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a failing test should stop loudly")]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        let delays: Vec<u64> = (1..=7).map(|r| backoff(r).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 15, 15, 15]);
    }

    #[test]
    fn the_browser_command_is_split_without_a_shell_and_the_url_is_one_argument() {
        let url = "https://pay.example/x?a=1&b=$(touch /tmp/pwned);c=`id`|d \"e\" 'f' %20";
        let (program, args) = browser_argv("./open.sh", url).unwrap_or_default();
        assert_eq!(program, "./open.sh");
        assert_eq!(args, [url]);
        let (program, args) = browser_argv("'/opt/My Browser/run' --new-window -p \"a b\"", url).unwrap_or_default();
        assert_eq!(program, "/opt/My Browser/run");
        assert_eq!(args, ["--new-window", "-p", "a b", url]);
        // Shell syntax in the command is not interpreted: it reaches the program as words.
        let (program, args) = browser_argv("echo $HOME; rm -rf / | cat", url).unwrap_or_default();
        assert_eq!(program, "echo");
        assert_eq!(args, ["$HOME;", "rm", "-rf", "/", "|", "cat", url]);
        assert!(browser_argv("", url).is_err());
        assert!(browser_argv("   ", url).is_err());
        assert!(browser_argv("'unbalanced", url).is_err());
    }

    #[test]
    fn highlights_only_the_host() {
        let url = elicit_runtime::client::check_url("https://user@pay.example.com/x").expect("a valid URL");
        assert_eq!(highlighted(&url, true), "https://user@\x1b[1;4mpay.example.com\x1b[0m/x");
        assert_eq!(highlighted(&url, false), "https://user@pay.example.com/x");
    }
}
