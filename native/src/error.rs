//! The crate's one error type. Format errors carry the byte offset and what was expected there;
//! the file they concern is attached once, at the top, with [`Error::in_file`].

use std::fmt;

/// Every failure of the codec, the inspector and the surgery.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bytes do not follow Flink's format.
    #[error("{}at byte {offset}: expected {expected}{}", file_prefix(.file), found_suffix(.found))]
    Format {
        file: String,
        offset: u64,
        expected: String,
        found: Option<String>,
    },
    /// Valid Flink bytes that this version of the tool does not handle.
    #[error("{}at byte {offset}: unsupported {what}", file_prefix(.file))]
    Unsupported {
        file: String,
        offset: u64,
        what: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The caller asked for something that cannot be done (bad selector, missing state, ...).
    #[error("{0}")]
    InvalidArgument(String),
    /// A surgery whose selection matches nothing (a typo, or a checkpoint already repaired).
    #[error("{0}")]
    NothingSelected(String),
    /// Another run holds the lock of a directory this run would change.
    #[error("{0}")]
    Locked(String),
}

fn file_prefix(file: &str) -> String {
    if file.is_empty() {
        String::new()
    } else {
        format!("{file}: ")
    }
}

fn found_suffix(found: &Option<String>) -> String {
    match found {
        Some(f) => format!(", found {f}"),
        None => String::new(),
    }
}

impl Error {
    pub fn format(offset: u64, expected: impl Into<String>, found: Option<String>) -> Self {
        Error::Format {
            file: String::new(),
            offset,
            expected: expected.into(),
            found,
        }
    }

    pub fn io(path: impl fmt::Display, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_string(),
            source,
        }
    }

    /// Names the file a format error was found in (if it does not name one yet).
    pub fn in_file(mut self, name: &str) -> Self {
        match &mut self {
            Error::Format { file, .. } | Error::Unsupported { file, .. } if file.is_empty() => {
                *file = name.to_string()
            }
            _ => {}
        }
        self
    }

    /// The stable code that the Java exception carries.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Format { .. } => "FORMAT",
            Error::Unsupported { .. } => "UNSUPPORTED",
            Error::Io { .. } => "IO",
            Error::InvalidArgument(_) => "INVALID_ARGUMENT",
            Error::NothingSelected(_) => "NOTHING_SELECTED",
            Error::Locked(_) => "LOCKED",
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
