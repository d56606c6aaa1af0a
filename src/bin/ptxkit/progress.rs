//! Progress of long work (`emit`, training and its pre-warm): an indicatif bar on stderr when
//! stderr is a terminal, else one plain line on stderr per phase. The report itself always
//! goes to stdout as plain lines, printed above the bar so the two do not garble each other.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar only when stderr is a terminal.
    pub fn new() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { bar }
    }

    /// Work of unknown length, such as the pre-warm.
    pub fn spin(&self, what: &str) {
        match &self.bar {
            Some(bar) => {
                bar.set_style(ProgressStyle::default_spinner());
                bar.set_message(what.to_string());
            }
            None => eprintln!("{what}"),
        }
    }

    /// Work of `total` units, `unit` naming one of them.
    pub fn start(&self, what: &str, total: u64, unit: &str) {
        match &self.bar {
            Some(bar) => {
                let template = format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{eta}})");
                let style = ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
                bar.set_style(style.progress_chars("=> "));
                bar.set_length(total);
                bar.set_position(0);
                bar.set_message(what.to_string());
            }
            None => eprintln!("{what}: {total} {unit}"),
        }
    }

    /// `done` units of the current work are finished; `item` says which is next.
    pub fn set(&self, done: u64, item: Option<&str>) {
        if let Some(bar) = &self.bar {
            bar.set_position(done);
            if let Some(item) = item {
                bar.set_message(item.to_string());
            }
        }
    }

    /// A line of the report, on stdout above the bar.
    pub fn line(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
