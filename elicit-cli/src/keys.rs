//! Single keys read at the terminal while something is pending (a URL step, a task): the
//! renderer's controls, which the task status line shares.

use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};

/// What the user pressed while a step was pending.
pub(crate) enum Key {
    Retry,
    OpenAgain,
    Cancel,
    Timeout,
}

/// Waits up to `delay` for r / o / c (Escape and Ctrl-C cancel).
pub(crate) fn read_key(delay: Duration) -> Key {
    if crossterm::terminal::enable_raw_mode().is_err() {
        std::thread::sleep(delay);
        return Key::Timeout;
    }
    let deadline = Instant::now() + delay;
    let key = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break Key::Timeout;
        }
        match event::poll(left) {
            Ok(true) => match event::read() {
                Ok(Event::Key(KeyEvent { code: KeyCode::Char('r'), .. })) => break Key::Retry,
                Ok(Event::Key(KeyEvent { code: KeyCode::Char('o'), .. })) => break Key::OpenAgain,
                Ok(Event::Key(KeyEvent { code: KeyCode::Char('c'), modifiers, .. }))
                    if !modifiers.contains(KeyModifiers::CONTROL) =>
                {
                    break Key::Cancel;
                }
                Ok(Event::Key(KeyEvent { code: KeyCode::Char('c'), .. } | KeyEvent { code: KeyCode::Esc, .. })) => {
                    break Key::Cancel;
                }
                Ok(_) => {}
                Err(_) => break Key::Timeout,
            },
            Ok(false) => break Key::Timeout,
            Err(_) => {
                std::thread::sleep(left);
                break Key::Timeout;
            }
        }
    };
    let _ = crossterm::terminal::disable_raw_mode();
    key
}
