//! The JNI bridge: every `extern "system"` export of the library, each a few lines that call
//! the plain Rust API. Errors and panics become `io.checkpointsurgeon.CheckpointSurgeonException`
//! (message `CODE: text`), never an abort of the JVM.

use crate::checkpoint::Checkpoint;
use crate::error::Error;
use crate::{commit, describe, inspect, metadata, surgery};
use bytes::Bytes;
use jni::errors::ErrorPolicy;
use jni::objects::{JByteArray, JClass, JString};
use jni::{jni_str, Env, EnvUnowned};
use std::path::Path;

const EXCEPTION_CLASS: &jni::strings::JNIStr =
    jni_str!("io/checkpointsurgeon/CheckpointSurgeonException");

/// Errors of the bridge itself: the crate's errors plus JNI failures.
#[derive(Debug, thiserror::Error)]
enum BridgeError {
    #[error(transparent)]
    Surgeon(#[from] Error),
    #[error("JNI: {0}")]
    Jni(#[from] jni::errors::Error),
}

/// Throws `CheckpointSurgeonException("CODE: message")` and returns the default value.
struct ThrowSurgeonException;

impl<T: Default> ErrorPolicy<T, BridgeError> for ThrowSurgeonException {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        err: BridgeError,
    ) -> jni::errors::Result<T> {
        if env.exception_check() {
            return Ok(T::default());
        }
        let code = match &err {
            BridgeError::Surgeon(e) => e.code(),
            BridgeError::Jni(_) => "JNI",
        };
        throw(env, &format!("{code}: {err}"));
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _cap: &mut Self::Captures<'unowned_env_local, 'native_method>,
        payload: Box<dyn std::any::Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let msg = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        };
        if env.exception_check() {
            env.exception_clear();
        }
        throw(env, &format!("PANIC: native code panicked: {msg}"));
        Ok(T::default())
    }
}

fn throw(env: &mut Env<'_>, msg: &str) {
    let msg = jni::strings::JNIString::new(msg);
    if env.throw_new(EXCEPTION_CLASS, &msg).is_err() && !env.exception_check() {
        let _ = env.throw_new(jni_str!("java/lang/RuntimeException"), &msg);
    }
}

fn bytes_arg(env: &Env<'_>, a: &JByteArray<'_>) -> Result<Bytes, BridgeError> {
    Ok(Bytes::from(env.convert_byte_array(a)?))
}

fn string_arg(env: &Env<'_>, s: &JString<'_>) -> Result<Option<String>, BridgeError> {
    if s.is_null() {
        return Ok(None);
    }
    Ok(Some(s.try_to_string(env)?))
}

/// `byte[] NativeBridge.inspect(String path)`: the binary inspection report of a checkpoint.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_inspect<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            // a mapped file truncated meanwhile must fail the call (mapguard)
            crate::mapguard::reset();
            let path = string_arg(env, &path)?.unwrap_or_default();
            let cp = Checkpoint::open(Path::new(&path))?;
            let report = inspect::inspect(&cp).encode();
            crate::mapguard::check()?;
            Ok(env.byte_array_from_slice(&report)?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `String NativeBridge.describe(byte[] metadata)`: the canonical description.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_describe<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
) -> JString<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            let md =
                metadata::parse(bytes_arg(env, &metadata)?).map_err(|e| e.in_file("<bytes>"))?;
            Ok(JString::from_str(env, describe::describe(&md))?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `byte[] NativeBridge.roundTrip(byte[] metadata)`: parse, then write the model again.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_roundTrip<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            let md =
                metadata::parse(bytes_arg(env, &metadata)?).map_err(|e| e.in_file("<bytes>"))?;
            Ok(env.byte_array_from_slice(&md.to_vec())?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `void NativeBridge.panicForTesting()`: proves that a Rust panic reaches Java as an exception.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_panicForTesting<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
) {
    unowned
        .with_env(|_env| -> Result<(), BridgeError> {
            panic!("deliberate panic to test the JNI boundary")
        })
        .resolve::<ThrowSurgeonException>()
}

/// `byte[] NativeBridge.plan(String path, String request)`: the surgery plan; writes nothing.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_plan<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    request: JString<'l>,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            // a mapped file truncated meanwhile must fail the call (mapguard)
            crate::mapguard::reset();
            let path = string_arg(env, &path)?.unwrap_or_default();
            let req = request_arg(env, &request)?;
            let cp = Checkpoint::open(Path::new(&path))?;
            let plan = surgery::plan(&cp, &req, &mut surgery::random_file_name)?;
            crate::mapguard::check()?;
            Ok(env.byte_array_from_slice(&surgery::encode_plan(&cp, &plan, None))?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `byte[] NativeBridge.stage(String path, String request, String streamDir)`: plans the surgery
/// and writes its new state files and new `_metadata` under fresh names in `streamDir` (see
/// `commit::stage`); returns the plan with what was staged.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_stage<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    request: JString<'l>,
    stream_dir: JString<'l>,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            // a mapped file truncated meanwhile must fail the call (mapguard)
            crate::mapguard::reset();
            let path = string_arg(env, &path)?.unwrap_or_default();
            let req = request_arg(env, &request)?;
            let stream_dir = string_arg(env, &stream_dir)?.unwrap_or_default();
            let cp = Checkpoint::open(Path::new(&path))?;
            let plan = surgery::plan(&cp, &req, &mut surgery::random_file_name)?;
            let staged = commit::stage(&cp, &plan, Path::new(&stream_dir), None)?;
            crate::mapguard::check()?;
            Ok(env.byte_array_from_slice(&surgery::encode_plan(&cp, &plan, Some(&staged)))?)
        })
        .resolve::<ThrowSurgeonException>()
}

// ---------------------------------------------------------------------------------------------
// Metadata bytes held by Java: an HA CompletedCheckpoint's state, or a remote checkpoint (S3, HDFS,
// GCS, ... through Flink's FileSystem on the Java side) that Java staged in a local mirror
// directory. `dir` is where relative state files live; `mirrors` (may be null) names the remote
// directories mirrored locally: lines `remote-prefix<TAB>local-dir`.

fn mirrored_checkpoint(
    env: &Env<'_>,
    metadata: &JByteArray<'_>,
    name: &JString<'_>,
    dir: &JString<'_>,
    mirrors: &JString<'_>,
) -> Result<Checkpoint, BridgeError> {
    let bytes = bytes_arg(env, metadata)?;
    let name = string_arg(env, name)?.unwrap_or_else(|| "<bytes>".into());
    let dir = string_arg(env, dir)?;
    let cp = Checkpoint::from_bytes(&name, dir.as_deref().map(Path::new), bytes)?;
    Ok(cp.with_mirrors(&string_arg(env, mirrors)?.unwrap_or_default())?)
}

fn request_arg(env: &Env<'_>, request: &JString<'_>) -> Result<surgery::Request, BridgeError> {
    Ok(surgery::Request::parse(
        &string_arg(env, request)?.unwrap_or_default(),
    )?)
}

/// `String NativeBridge.stateFiles(byte[] metadata)`: every file-backed stream handle, one per
/// line: `op|other <TAB> relative|file|segment <TAB> path [<TAB> start <TAB> size]`; `op` marks
/// the delegates of operator state handles (the streams inspect and surgery read).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_stateFiles<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
) -> JString<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            let bytes = bytes_arg(env, &metadata)?;
            let md = metadata::parse(bytes).map_err(|e| e.in_file("<metadata>"))?;
            Ok(JString::from_str(env, state_file_lines(&md))?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `String NativeBridge.stateFilesOf(String path)`: [`Java_io_checkpointsurgeon_NativeBridge_stateFiles`]
/// of a local checkpoint, read natively.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_stateFilesOf<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
) -> JString<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            // a mapped file truncated meanwhile must fail the call (mapguard)
            crate::mapguard::reset();
            let path = string_arg(env, &path)?.unwrap_or_default();
            let cp = Checkpoint::open(Path::new(&path))?;
            let lines = state_file_lines(&cp.metadata);
            crate::mapguard::check()?;
            Ok(JString::from_str(env, lines)?)
        })
        .resolve::<ThrowSurgeonException>()
}

fn state_file_lines(md: &metadata::CheckpointMetadata) -> String {
    use crate::handles::StreamHandle;
    fn line(scope: &str, h: &StreamHandle) -> Option<String> {
        match h {
            StreamHandle::RelativeFile { path, .. } => Some(format!("{scope}\trelative\t{path}")),
            StreamHandle::File { path, .. } => Some(format!("{scope}\tfile\t{path}")),
            StreamHandle::Segment {
                path, start, size, ..
            } => Some(format!("{scope}\tsegment\t{path}\t{start}\t{size}")),
            _ => None,
        }
    }
    let mut op = Vec::new();
    for o in &md.operators {
        for (_, st) in o.subtask_states() {
            for h in [st.managed_operator(), st.raw_operator()]
                .into_iter()
                .flatten()
            {
                if let Some(l) = h.delegate.as_ref().and_then(|d| line("op", d)) {
                    op.push(l);
                }
            }
        }
    }
    let mut all = Vec::new();
    md.visit_stream_handles(&mut |h| {
        if let Some(l) = line("other", h) {
            all.push(l);
        }
    });
    op.sort();
    op.dedup();
    all.sort();
    all.dedup();
    let mut out = op.join("\n");
    for l in all {
        out.push('\n');
        out.push_str(&l);
    }
    out
}

/// `byte[] NativeBridge.inspectMirrored(byte[] metadata, String name, String dir, String mirrors)`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_inspectMirrored<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
    name: JString<'l>,
    dir: JString<'l>,
    mirrors: JString<'l>,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            // a mapped file truncated meanwhile must fail the call (mapguard)
            crate::mapguard::reset();
            let cp = mirrored_checkpoint(env, &metadata, &name, &dir, &mirrors)?;
            let report = inspect::inspect(&cp).encode();
            crate::mapguard::check()?;
            Ok(env.byte_array_from_slice(&report)?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `byte[] NativeBridge.planMirrored(byte[] metadata, String name, String dir, String request,
/// String mirrors)`: the plan; writes nothing.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_planMirrored<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
    name: JString<'l>,
    dir: JString<'l>,
    request: JString<'l>,
    mirrors: JString<'l>,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            // a mapped file truncated meanwhile must fail the call (mapguard)
            crate::mapguard::reset();
            let cp = mirrored_checkpoint(env, &metadata, &name, &dir, &mirrors)?;
            let plan = surgery::plan(
                &cp,
                &request_arg(env, &request)?,
                &mut surgery::random_file_name,
            )?;
            crate::mapguard::check()?;
            Ok(env.byte_array_from_slice(&surgery::encode_plan(&cp, &plan, None))?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `byte[] NativeBridge.stageMirrored(byte[] metadata, String name, String dir, String request,
/// String mirrors, String outputUri, String streamDir)`: [`Java_io_checkpointsurgeon_NativeBridge_stage`]
/// on metadata bytes. With an `outputUri` (a Flink path), absolute handles of new files name
/// `<outputUri>/<file>`, where the caller uploads them from `streamDir`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_stageMirrored<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
    name: JString<'l>,
    dir: JString<'l>,
    request: JString<'l>,
    mirrors: JString<'l>,
    output_uri: JString<'l>,
    stream_dir: JString<'l>,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            // a mapped file truncated meanwhile must fail the call (mapguard)
            crate::mapguard::reset();
            let cp = mirrored_checkpoint(env, &metadata, &name, &dir, &mirrors)?;
            let out_uri = string_arg(env, &output_uri)?;
            let stream_dir = string_arg(env, &stream_dir)?.unwrap_or_default();
            let plan = surgery::plan(
                &cp,
                &request_arg(env, &request)?,
                &mut surgery::random_file_name,
            )?;
            let staged = commit::stage(&cp, &plan, Path::new(&stream_dir), out_uri.as_deref())?;
            crate::mapguard::check()?;
            Ok(env.byte_array_from_slice(&surgery::encode_plan(&cp, &plan, Some(&staged)))?)
        })
        .resolve::<ThrowSurgeonException>()
}

/// Directory locks held for Java (`NativeBridge.lockDirectory` / `unlockDirectory`), by id.
static LOCKS: std::sync::Mutex<std::collections::BTreeMap<i64, std::fs::File>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());
static NEXT_LOCK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);

/// `long NativeBridge.lockDirectory(String dir)`: takes the commit lock of a directory
/// (`commit::lock_dir`) and returns its id for `unlockDirectory`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_lockDirectory<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    dir: JString<'l>,
) -> jni::sys::jlong {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            let dir = string_arg(env, &dir)?.unwrap_or_default();
            let file = commit::lock_dir(Path::new(&dir))?;
            let id = NEXT_LOCK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            LOCKS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, file);
            Ok(id)
        })
        .resolve::<ThrowSurgeonException>()
}

/// `void NativeBridge.unlockDirectory(long id)`: releases a lock taken by `lockDirectory`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_unlockDirectory<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    id: jni::sys::jlong,
) {
    unowned
        .with_env(|_env| -> Result<(), BridgeError> {
            LOCKS.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            Ok(())
        })
        .resolve::<ThrowSurgeonException>()
}

/// `String NativeBridge.libraryVersion()`: the crate version, which the Java side checks against
/// its own before it uses the library.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_NativeBridge_libraryVersion<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JString<'l> {
    unowned
        .with_env(|env| -> Result<_, BridgeError> {
            Ok(JString::from_str(env, env!("CARGO_PKG_VERSION"))?)
        })
        .resolve::<ThrowSurgeonException>()
}
