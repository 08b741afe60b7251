//! The crate's one error type and the one list of error codes. Format errors carry the byte
//! offset and what was expected there; the file they concern is attached once, at the top, with
//! [`Error::in_file`].

use std::fmt;

/// The stable code of every failure the tool reports, raised in Rust or in Java. The Java twin is
/// `CheckpointSurgeonException.Code` (same names, same order: a test checks it); the bridge builds
/// the Java exception with its constant. README's table of codes is checked against [`Code::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    Format,
    Unsupported,
    Io,
    InvalidArgument,
    NothingSelected,
    Locked,
    Validation,
    FlinkMissing,
    Library,
    Wire,
    Jni,
    Panic,
    /// Only the Java side's: the JVM shut down (a signal) during a repair, which removed what it created.
    Interrupted,
}

impl Code {
    pub const ALL: [Code; 13] = [
        Code::Format,
        Code::Unsupported,
        Code::Io,
        Code::InvalidArgument,
        Code::NothingSelected,
        Code::Locked,
        Code::Validation,
        Code::FlinkMissing,
        Code::Library,
        Code::Wire,
        Code::Jni,
        Code::Panic,
        Code::Interrupted,
    ];

    /// The name both sides use (`INVALID_ARGUMENT`).
    pub fn name(self) -> &'static str {
        match self {
            Code::Format => "FORMAT",
            Code::Unsupported => "UNSUPPORTED",
            Code::Io => "IO",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::NothingSelected => "NOTHING_SELECTED",
            Code::Locked => "LOCKED",
            Code::Validation => "VALIDATION",
            Code::FlinkMissing => "FLINK_MISSING",
            Code::Library => "LIBRARY",
            Code::Wire => "WIRE",
            Code::Jni => "JNI",
            Code::Panic => "PANIC",
            Code::Interrupted => "INTERRUPTED",
        }
    }

    /// What the code means, as README's table says it.
    pub fn meaning(self) -> &'static str {
        match self {
            Code::Format => "the bytes are not what Flink writes: the message names the file, the byte offset and what was expected",
            Code::Unsupported => "valid Flink bytes this version of the tool does not handle",
            Code::Io => "a file could not be read, created or renamed",
            Code::InvalidArgument => "the request cannot be done on this input (bad selector, state not of that kind, unsafe path, ...)",
            Code::NothingSelected => "the selection matches nothing (a typo, or a checkpoint already repaired)",
            Code::Locked => "another run holds the lock of a directory this run would change",
            Code::Validation => "the result failed a check (Flink's loader, the read-back, a file that changed meanwhile); nothing was made visible",
            Code::FlinkMissing => "the operation needs Flink's classes on the class path (HA files, Flink paths, the loader check)",
            Code::Library => "the native library could not be loaded, or is of another version than the jar",
            Code::Wire => "a payload between Java and the native library is malformed or of another wire version",
            Code::Jni => "a JNI call failed",
            Code::Panic => "a bug: the native code panicked (the JVM keeps running)",
            Code::Interrupted => "the JVM shut down (SIGTERM, SIGHUP, SIGINT) before the switch; the run removed what it created, nothing was changed",
        }
    }
}

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
    /// A JNI payload that does not follow the wire layout (see [`crate::wire`]).
    #[error("{0}")]
    Wire(String),
    /// A staged result failed its read-back check; nothing was made visible.
    #[error("{0}")]
    Validation(String),
    /// An error met elsewhere (a Flink task, a Java callback), with the code it had there.
    #[error("{message}")]
    Relayed { code: Code, message: String },
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
    pub fn code(&self) -> Code {
        match self {
            Error::Format { .. } => Code::Format,
            Error::Unsupported { .. } => Code::Unsupported,
            Error::Io { .. } => Code::Io,
            Error::InvalidArgument(_) => Code::InvalidArgument,
            Error::NothingSelected(_) => Code::NothingSelected,
            Error::Locked(_) => Code::Locked,
            Error::Wire(_) => Code::Wire,
            Error::Validation(_) => Code::Validation,
            Error::Relayed { code, .. } => *code,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
