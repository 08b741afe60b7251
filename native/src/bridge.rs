//! The JNI bridge: every `extern "system"` export of the library (the natives of
//! `io.checkpointsurgeon.internal.NativeBridge`), each a few lines around one call of the plain Rust API.
//! The frame of an export ([`export`], [`ToJava`], the argument readers) is public for the test-only
//! exports, which live in a library of their own (`native/testing`) so that this one ships none.
//! Arguments and results are [`crate::wire`] payloads. Errors and panics become
//! `CheckpointSurgeonException(Code, message)`, built with the class, constructor and `Code`
//! constants cached once; never an abort of the JVM.

use crate::codec::metadata;
use crate::commit::keyed::{read_keyed_from, KeyedProgress};
use crate::commit::read::Remote;
use crate::commit::remote::{RemoteCheckpoint, RemoteFiles};
use crate::commit::{self, Checkpoint};
use crate::error::{Code, Error};
use crate::report::{describe, files, inspect};
use crate::surgery::{self, Request};
use crate::wire::{self, PlanSummary, Source};
use bytes::Bytes;
use jni::errors::ErrorPolicy;
use jni::objects::{JByteArray, JClass, JObject, JString, JThrowable};
use jni::refs::Global;
use jni::{jni_sig, jni_str, Env, EnvUnowned, JValue};
use once_cell::sync::OnceCell;
use std::path::Path;

/// Errors of the bridge itself: the crate's errors plus JNI failures.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Surgeon(#[from] Error),
    #[error("JNI: {0}")]
    Jni(#[from] jni::errors::Error),
}

pub type Result<T> = std::result::Result<T, BridgeError>;

/// The Java exception class, its `(Code, String)` constructor and every `Code` constant, in
/// [`Code::ALL`] order: looked up once, on the first error.
struct ExceptionRefs {
    class: Global<JClass<'static>>,
    constructor: jni::objects::JMethodID,
    codes: Vec<Global<JObject<'static>>>,
}

static EXCEPTION: OnceCell<ExceptionRefs> = OnceCell::new();

fn exception_refs(env: &mut Env<'_>) -> jni::errors::Result<&'static ExceptionRefs> {
    // the lookup's local references (a class and a constant per code) in a frame of their own:
    // more than the 16 a native method may hold without asking (-Xcheck:jni warns)
    EXCEPTION.get_or_try_init(|| env.with_local_frame(2 * Code::ALL.len() + 8, exception_lookup))
}

fn exception_lookup(env: &mut Env<'_>) -> jni::errors::Result<ExceptionRefs> {
    {
        let class = env.find_class(jni_str!("io/checkpointsurgeon/CheckpointSurgeonException"))?;
        let constructor = env.get_method_id(
            &class,
            jni_str!("<init>"),
            jni_sig!("(Lio/checkpointsurgeon/CheckpointSurgeonException$Code;Ljava/lang/String;)V"),
        )?;
        let code_class = env.find_class(jni_str!(
            "io/checkpointsurgeon/CheckpointSurgeonException$Code"
        ))?;
        let mut codes = Vec::with_capacity(Code::ALL.len());
        for code in Code::ALL {
            let constant = env
                .get_static_field(
                    &code_class,
                    jni::strings::JNIString::new(code.name()),
                    jni_sig!("Lio/checkpointsurgeon/CheckpointSurgeonException$Code;"),
                )?
                .l()?;
            codes.push(env.new_global_ref(constant)?);
        }
        Ok(ExceptionRefs {
            class: env.new_global_ref(class)?,
            constructor,
            codes,
        })
    }
}

/// Throws `CheckpointSurgeonException(code, message)`; a `RuntimeException` if even that fails.
fn throw(env: &mut Env<'_>, code: Code, message: &str) {
    let thrown = (|| -> jni::errors::Result<()> {
        let refs = exception_refs(env)?;
        let index = Code::ALL.iter().position(|c| *c == code).unwrap_or(0);
        let msg = JString::from_str(env, message)?;
        // SAFETY: the constructor id was looked up on this class with exactly this signature,
        // (Code, String), and the arguments are a Code constant and a String.
        let obj = unsafe {
            env.new_object_unchecked(
                &refs.class,
                refs.constructor,
                &[
                    JValue::Object(&refs.codes[index]).as_jni(),
                    JValue::Object(&msg).as_jni(),
                ],
            )
        }?;
        let throwable = env.cast_local::<JThrowable>(obj)?;
        env.throw(throwable)
    })();
    if thrown.is_err() && !env.exception_check() {
        let msg = jni::strings::JNIString::new(format!("{}: {message}", code.name()));
        let _ = env.throw_new(jni_str!("java/lang/RuntimeException"), &msg);
    }
}

/// Resolves every export: throws the crate's error with its code, a panic as `PANIC`.
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
            BridgeError::Jni(_) => Code::Jni,
        };
        throw(env, code, &err.to_string());
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
        throw(env, Code::Panic, &format!("native code panicked: {msg}"));
        Ok(T::default())
    }
}

/// A value an export hands back to Java: bytes as a `byte[]`, text as a `String` (`None`: null),
/// a `long`, or nothing.
pub trait ToJava<'l> {
    type Java: Default + 'l;
    fn to_java(self, env: &mut Env<'l>) -> Result<Self::Java>;
}

impl<'l> ToJava<'l> for Vec<u8> {
    type Java = JByteArray<'l>;
    fn to_java(self, env: &mut Env<'l>) -> Result<JByteArray<'l>> {
        Ok(env.byte_array_from_slice(&self)?)
    }
}

impl<'l> ToJava<'l> for String {
    type Java = JString<'l>;
    fn to_java(self, env: &mut Env<'l>) -> Result<JString<'l>> {
        Ok(JString::from_str(env, self)?)
    }
}

impl<'l> ToJava<'l> for Option<String> {
    type Java = JString<'l>;
    fn to_java(self, env: &mut Env<'l>) -> Result<JString<'l>> {
        match self {
            Some(s) => s.to_java(env),
            None => Ok(JString::null()),
        }
    }
}

impl<'l> ToJava<'l> for i64 {
    type Java = jni::sys::jlong;
    fn to_java(self, _env: &mut Env<'l>) -> Result<jni::sys::jlong> {
        Ok(self)
    }
}

impl<'l> ToJava<'l> for () {
    type Java = ();
    fn to_java(self, _env: &mut Env<'l>) -> Result<()> {
        Ok(())
    }
}

/// The frame of every export: runs `body`, hands its value to Java, and turns an error or a panic
/// into the same `CheckpointSurgeonException` ([`ThrowSurgeonException`]) whatever the export.
pub fn export<'l, T: ToJava<'l>>(
    mut unowned: EnvUnowned<'l>,
    body: impl FnOnce(&mut Env<'l>) -> Result<T>,
) -> T::Java {
    unowned
        .with_env(|env| -> Result<T::Java> { body(env)?.to_java(env) })
        .resolve::<ThrowSurgeonException>()
}

pub fn bytes_arg(env: &Env<'_>, a: &JByteArray<'_>) -> Result<Bytes> {
    Ok(Bytes::from(env.convert_byte_array(a)?))
}

/// A `_metadata` handed over as bytes, parsed (errors name the file `<bytes>`).
fn metadata_arg(env: &Env<'_>, a: &JByteArray<'_>) -> Result<metadata::CheckpointMetadata> {
    Ok(metadata::parse(bytes_arg(env, a)?).map_err(|e| e.in_file("<bytes>"))?)
}

pub fn string_arg(env: &Env<'_>, s: &JString<'_>) -> Result<Option<String>> {
    if s.is_null() {
        return Ok(None);
    }
    Ok(Some(s.try_to_string(env)?))
}

/// Runs `f` on the checkpoint a [`Source`] names. A file that shrinks while it is mapped fails
/// the call (`mapguard`) instead of crashing the JVM.
fn with_checkpoint<T>(
    env: &Env<'_>,
    source: &JByteArray<'_>,
    f: impl FnOnce(&Checkpoint) -> crate::Result<T>,
) -> Result<T> {
    with_checkpoint_then(env, source, None, f, drop)
}

/// [`with_checkpoint`], handing the checkpoint to `then` when done instead of dropping it here;
/// with `remote`, the streams its mirror does not hold are read remotely.
fn with_checkpoint_then<T>(
    env: &Env<'_>,
    source: &JByteArray<'_>,
    remote: Option<Remote>,
    f: impl FnOnce(&Checkpoint) -> crate::Result<T>,
    then: impl FnOnce(Checkpoint),
) -> Result<T> {
    commit::mapguard::reset();
    let cp = match Source::decode(bytes_arg(env, source)?)? {
        Source::Path(p) => Checkpoint::open(Path::new(&p))?,
        Source::Bytes {
            metadata,
            name,
            dir,
            mirrors,
        } => {
            let mut cp = Checkpoint::from_bytes(&name, dir.as_deref().map(Path::new), metadata)?;
            for (prefix, local) in mirrors {
                cp.add_mirror(&prefix, local.into());
            }
            cp
        }
    };
    let cp = Checkpoint { remote, ..cp };
    let out = f(&cp)?;
    commit::mapguard::check()?;
    then(cp);
    Ok(out)
}

/// `byte[] inspect(byte[] source)`: the inspection report.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_inspect<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    source: JByteArray<'l>,
) -> JByteArray<'l> {
    export(unowned, |env| {
        // _metadata is unmapped on a thread of its own while Java prints the report
        let unmap = |cp| drop(std::thread::spawn(move || drop(cp)));
        with_checkpoint_then(
            env,
            &source,
            None,
            |cp| Ok(inspect::inspect(cp).encode()),
            unmap,
        )
    })
}

/// The Java object that reads remote files, writes the new ones a keyed surgery streams to a
/// Flink path, and hears how far a keyed read is (`io.checkpointsurgeon.internal.KeyedReads`),
/// called from the reading threads, which attach to the JVM on their first call.
struct JavaReads {
    vm: jni::JavaVM,
    obj: Global<JObject<'static>>,
    /// The Java array each file being written is handed over in, by its id: one per file, reused.
    buffers: std::sync::Mutex<
        std::collections::HashMap<i64, std::sync::Arc<Global<JByteArray<'static>>>>,
    >,
}

impl JavaReads {
    fn new(env: &Env<'_>, obj: JObject<'_>) -> jni::errors::Result<JavaReads> {
        Ok(JavaReads {
            vm: env.get_java_vm()?,
            obj: env.new_global_ref(obj)?,
            buffers: std::sync::Mutex::new(std::collections::HashMap::new()),
        })
    }

    /// Calls a callback on this thread (attached if need be) in a local frame of its own.
    fn call<T>(
        &self,
        what: &str,
        call: impl FnOnce(&mut Env<'_>) -> jni::errors::Result<T>,
    ) -> crate::Result<T> {
        let out = self
            .vm
            .attach_current_thread(|env| env.with_local_frame(16, |env| calling(env, call)));
        relayed(out, what)
    }

    /// [`call`](Self::call) of a method whose first argument is `path`; a failure is an I/O error
    /// of `path` (its code kept when it had one).
    fn call_path<T>(
        &self,
        path: &str,
        call: impl FnOnce(&mut Env<'_>, JValue<'_>) -> jni::errors::Result<T>,
    ) -> crate::Result<T> {
        self.call(path, |env| {
            let p = JString::from_str(env, path)?;
            call(env, JValue::Object(&p))
        })
        .map_err(|e| remote_io(path, e))
    }

    fn buffers(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<i64, std::sync::Arc<Global<JByteArray<'static>>>>,
    > {
        self.buffers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl JavaReads {
    fn progress(&self, p: KeyedProgress) {
        // progress is advice: a failure to report it does not fail the read
        let _ = self
            .vm
            .attach_current_thread(|env| -> jni::errors::Result<()> {
                env.call_method(
                    &self.obj,
                    jni_str!("progress"),
                    jni_sig!("(IIJJ)V"),
                    &[
                        JValue::Int(p.parts_done as i32),
                        JValue::Int(p.parts as i32),
                        JValue::Long(p.bytes_done as i64),
                        JValue::Long(p.bytes as i64),
                    ],
                )?;
                Ok(())
            });
    }
}

impl RemoteFiles for JavaReads {
    fn read_at(&self, path: &str, offset: u64, buf: &mut [u8]) -> crate::Result<()> {
        let v = self.call_path(path, |env, p| {
            let args = [
                p,
                JValue::Long(offset as i64),
                JValue::Int(buf.len() as i32),
            ];
            let sig = jni_sig!("(Ljava/lang/String;JI)[B");
            let arr = env
                .call_method(&self.obj, jni_str!("read"), sig, &args)?
                .l()?;
            let arr = env.cast_local::<JByteArray>(arr)?;
            env.convert_byte_array(&arr)
        })?;
        if v.len() != buf.len() {
            return Err(Error::io(
                path,
                std::io::Error::other(format!(
                    "{} bytes at byte {offset} were asked for, {} came",
                    buf.len(),
                    v.len()
                )),
            ));
        }
        buf.copy_from_slice(&v);
        Ok(())
    }

    fn done(&self, path: &str) {
        let _ = self
            .vm
            .attach_current_thread(|env| -> jni::errors::Result<()> {
                let p = JString::from_str(env, path)?;
                env.call_method(
                    &self.obj,
                    jni_str!("done"),
                    jni_sig!("(Ljava/lang/String;)V"),
                    &[JValue::Object(&p)],
                )?;
                Ok(())
            });
    }

    fn length(&self, path: &str) -> crate::Result<u64> {
        let n = self.call_path(path, |env, p| {
            let sig = jni_sig!("(Ljava/lang/String;)J");
            env.call_method(&self.obj, jni_str!("length"), sig, &[p])?
                .j()
        })?;
        Ok(n.max(0) as u64)
    }

    fn create(&self, path: &str) -> crate::Result<i64> {
        let (id, buf) = self.call_path(path, |env, p| {
            let sig = jni_sig!("(Ljava/lang/String;)J");
            let id = env
                .call_method(&self.obj, jni_str!("create"), sig, &[p])?
                .j()?;
            let buf = env.new_byte_array(commit::remote::RemoteSink::BUFFER)?;
            Ok((id, std::sync::Arc::new(env.new_global_ref(buf)?)))
        })?;
        self.buffers().insert(id, buf);
        Ok(id)
    }

    fn write(&self, id: i64, buf: &[u8]) -> crate::Result<()> {
        let arr = self.buffers().get(&id).cloned();
        let arr = arr.ok_or_else(|| Error::InvalidArgument(format!("no new file {id}")))?;
        self.call("a new remote file", |env| {
            // SAFETY: u8 and i8 have the same size and alignment; the bytes are only copied
            let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<i8>(), buf.len()) };
            arr.set_region(env, 0, bytes)?;
            env.call_method(
                &self.obj,
                jni_str!("write"),
                jni_sig!("(J[BI)V"),
                &[
                    JValue::Long(id),
                    JValue::Object(&arr),
                    JValue::Int(buf.len() as i32),
                ],
            )?;
            Ok(())
        })
    }

    fn close(&self, id: i64) -> crate::Result<()> {
        self.buffers().remove(&id);
        self.call("a new remote file", |env| {
            env.call_method(
                &self.obj,
                jni_str!("close"),
                jni_sig!("(J)V"),
                &[JValue::Long(id)],
            )?;
            Ok(())
        })
    }

    fn abandon(&self, id: i64) {
        self.buffers().remove(&id);
        let _ = self.call("a new remote file", |env| {
            env.call_method(
                &self.obj,
                jni_str!("abandon"),
                jni_sig!("(J)V"),
                &[JValue::Long(id)],
            )?;
            Ok(())
        });
    }
}

/// A failed remote call as an I/O error of `path`, with its code kept when it had one.
fn remote_io(path: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument(m) => Error::io(path, std::io::Error::other(m)),
        e => e,
    }
}

/// `byte[] inspectKeyed(byte[] source, String remoteDir, KeyedReads reads, int threads)`: the
/// keyed-state report. Without `remoteDir` the checkpoint is local (or its `_metadata` bytes name
/// local files) and read natively; with it, `source` holds the `_metadata` bytes of the remote
/// checkpoint directory `remoteDir`, whose files `reads` reads in ranges. `reads` (may be null
/// for a local checkpoint) hears the progress after every handle.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_inspectKeyed<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    source: JByteArray<'l>,
    remote_dir: JString<'l>,
    reads: JObject<'l>,
    threads: jni::sys::jint,
) -> JByteArray<'l> {
    export(unowned, |env| {
        let remote_dir = string_arg(env, &remote_dir)?;
        let reads = if reads.is_null() {
            None
        } else {
            Some(JavaReads::new(env, reads)?)
        };
        let threads = usize::try_from(threads).unwrap_or(1).max(1);
        let progress = |p: KeyedProgress| {
            if let Some(r) = &reads {
                r.progress(p);
            }
        };
        match (&remote_dir, &reads) {
            (Some(dir), Some(r)) => {
                let Source::Bytes { metadata, name, .. } =
                    Source::decode(bytes_arg(env, &source)?)?
                else {
                    return Err(Error::InvalidArgument(
                        "a remote checkpoint comes as _metadata bytes".into(),
                    )
                    .into());
                };
                let cp = RemoteCheckpoint::new(&name, dir, metadata, r)?;
                Ok(wire::encode_keyed_report(
                    &name,
                    &read_keyed_from(&cp, threads, &progress),
                ))
            }
            (Some(_), None) => Err(Error::InvalidArgument(
                "a remote checkpoint needs a reader of its files".into(),
            )
            .into()),
            (None, _) => with_checkpoint(env, &source, |cp| {
                Ok(wire::encode_keyed_report(
                    &cp.metadata_path.display().to_string(),
                    &read_keyed_from(cp, threads, &progress),
                ))
            }),
        }
    })
}

/// The Java object that rewrites keyed work items on a Flink cluster
/// (`io.checkpointsurgeon.flink.KeyedRewriteJob`): `byte[] rewrite(byte[] items)`, both framed
/// by `commit::work::frame`. Called from the stage's own thread, which is attached.
struct JavaRewriter {
    vm: jni::JavaVM,
    obj: Global<JObject<'static>>,
}

impl commit::work::KeyedRewriter for JavaRewriter {
    fn rewrite(&self, items: Vec<Vec<u8>>) -> crate::Result<Vec<Bytes>> {
        let framed = commit::work::frame(&items);
        // the callback's local references in a frame of their own
        let out = self.vm.attach_current_thread(|env| {
            env.with_local_frame(16, |env| {
                calling(env, |env| {
                    let arg = env.byte_array_from_slice(&framed)?;
                    let arr = env
                        .call_method(
                            &self.obj,
                            jni_str!("rewrite"),
                            jni_sig!("([B)[B"),
                            &[JValue::Object(&arg)],
                        )?
                        .l()?;
                    let arr = env.cast_local::<JByteArray>(arr)?;
                    env.convert_byte_array(&arr)
                })
            })
        });
        commit::work::unframe(Bytes::from(relayed(
            out,
            "the keyed rewrite on Flink failed",
        )?))
    }
}

/// A Java exception a callback threw (`call` returned `JavaException`), caught here in the
/// callback's own local frame: its code if it is a `CheckpointSurgeonException`, and its message
/// (with its class otherwise). jni's own catch walks the whole stack trace, two local
/// references an element, past its frame's capacity (-Xcheck:jni warns on a Flink stack).
fn caught(env: &mut Env<'_>) -> jni::errors::Result<(Option<Code>, String)> {
    let Some(e) = env.exception_occurred() else {
        return Err(jni::errors::Error::JavaException);
    };
    env.exception_clear();
    let refs = exception_refs(env)?;
    let ours = env.is_instance_of(&e, &refs.class)?;
    let mut code = None;
    if ours {
        let c = env
            .call_method(
                &e,
                jni_str!("code"),
                jni_sig!("()Lio/checkpointsurgeon/CheckpointSurgeonException$Code;"),
                &[],
            )?
            .l()?;
        for (i, known) in refs.codes.iter().enumerate() {
            if env.is_same_object(known, &c)? {
                code = Some(Code::ALL[i]);
            }
        }
    }
    let text = env
        .call_method(
            &e,
            if ours {
                jni_str!("getMessage")
            } else {
                jni_str!("toString")
            },
            jni_sig!("()Ljava/lang/String;"),
            &[],
        )?
        .l()?;
    let text = env.cast_local::<JString>(text)?;
    let text = if text.is_null() {
        String::new()
    } else {
        text.try_to_string(env)?
    };
    Ok((code, text))
}

/// The outcome of a Java callback: its value, or the exception it threw ([`caught`]).
type Called<T> = std::result::Result<T, (Option<Code>, String)>;

/// Calls a Java callback through `call`, catching what it throws with [`caught`].
fn calling<T>(
    env: &mut Env<'_>,
    call: impl FnOnce(&mut Env<'_>) -> jni::errors::Result<T>,
) -> jni::errors::Result<Called<T>> {
    match call(env) {
        Ok(v) => Ok(Ok(v)),
        Err(jni::errors::Error::JavaException) => Ok(Err(caught(env)?)),
        Err(e) => Err(e),
    }
}

/// A callback's failure as the crate's error: a `CheckpointSurgeonException` keeps its code (a
/// Flink task's `FORMAT` stays `FORMAT`), any other is `INVALID_ARGUMENT`.
fn relayed<T>(out: jni::errors::Result<Called<T>>, what: &str) -> crate::Result<T> {
    match out {
        Ok(Ok(v)) => Ok(v),
        Ok(Err((Some(code), message))) => Err(Error::Relayed { code, message }),
        Ok(Err((None, message))) => Err(Error::InvalidArgument(message)),
        Err(e) => Err(Error::InvalidArgument(format!("{what}: {e}"))),
    }
}

/// `byte[] rewriteKeyedWork(byte[] item)`: a Flink task's part of a keyed stage on a cluster
/// (`commit::work::rewrite_work`): one keyed stream rewritten into its new file, read back.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_rewriteKeyedWork<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    item: JByteArray<'l>,
) -> JByteArray<'l> {
    export(unowned, |env| {
        Ok(commit::work::rewrite_work(bytes_arg(env, &item)?)?)
    })
}

/// `byte[] plan(byte[] source, byte[] request, String streamDir, String outputUri, String
/// remoteDir, KeyedReads reads, Object rewriter)`: the surgery plan. With a `streamDir`, also the
/// stage step of the commit (`commit::stage`): the new state files and the new `_metadata` under
/// fresh names there; absolute handles of new files name `<outputUri>/<file>` when the caller
/// uploads them there (a Flink path). With `remoteDir` and `reads` (a checkpoint on a Flink path
/// whose mirror holds its operator state only), every other stream is read through `reads` in
/// ranges. A `rewriter` (may be null) rewrites the keyed streams on a Flink cluster.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_plan<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    source: JByteArray<'l>,
    request: JByteArray<'l>,
    stream_dir: JString<'l>,
    output_uri: JString<'l>,
    remote_dir: JString<'l>,
    reads: JObject<'l>,
    rewriter: JObject<'l>,
) -> JByteArray<'l> {
    export(unowned, |env| {
        let req = Request::decode(bytes_arg(env, &request)?)?;
        let stream_dir = string_arg(env, &stream_dir)?;
        let output_uri = string_arg(env, &output_uri)?;
        let rewriter = if rewriter.is_null() {
            None
        } else {
            Some(JavaRewriter {
                vm: env.get_java_vm()?,
                obj: env.new_global_ref(rewriter)?,
            })
        };
        let remote = match (string_arg(env, &remote_dir)?, reads.is_null()) {
            (Some(dir), false) => Some(Remote {
                files: std::sync::Arc::new(JavaReads::new(env, reads)?),
                dir,
            }),
            _ => None,
        };
        with_checkpoint_then(
            env,
            &source,
            remote,
            |cp| {
                let plan = surgery::plan(cp, &req, &mut commit::random_file_name)?;
                let staged = match &stream_dir {
                    Some(d) => Some(commit::stage_with(
                        cp,
                        &plan,
                        Path::new(d),
                        output_uri.as_deref(),
                        rewriter
                            .as_ref()
                            .map(|r| r as &dyn commit::work::KeyedRewriter),
                    )?),
                    None => None,
                };
                Ok(PlanSummary::of(cp, &plan, staged.as_ref()).encode())
            },
            drop,
        )
    })
}

/// `byte[] stateFiles(byte[] source)`: the files the checkpoint's state lives in.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_stateFiles<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    source: JByteArray<'l>,
) -> JByteArray<'l> {
    export(unowned, |env| {
        with_checkpoint(env, &source, |cp| {
            Ok(wire::encode_state_files(&files::state_files(&cp.metadata)))
        })
    })
}

/// `String relocatedPath(String path, String from, String to)`: the path under `to` as
/// relocate rewrites it, or null when it is not under `from` (the HA pointers use it).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_relocatedPath<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    path: JString<'l>,
    from: JString<'l>,
    to: JString<'l>,
) -> JString<'l> {
    export(unowned, |env| {
        let [path, from, to] = [&path, &from, &to].map(|s| string_arg(env, s));
        Ok(surgery::relocate::relocated(
            &path?.unwrap_or_default(),
            &from?.unwrap_or_default(),
            &to?.unwrap_or_default(),
        ))
    })
}

/// `String describe(byte[] metadata)`: the canonical description.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_describe<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
) -> JString<'l> {
    export(unowned, |env| {
        Ok(describe::describe(&metadata_arg(env, &metadata)?))
    })
}

/// `byte[] roundTrip(byte[] metadata)`: parse, then write the model again.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_roundTrip<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    metadata: JByteArray<'l>,
) -> JByteArray<'l> {
    export(unowned, |env| Ok(metadata_arg(env, &metadata)?.to_vec()))
}

/// Directory locks held for Java (`lockDirectory` / `unlockDirectory`), by id.
static LOCKS: std::sync::Mutex<std::collections::BTreeMap<i64, std::fs::File>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());
static NEXT_LOCK: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);

/// `long lockDirectory(String dir)`: takes the commit lock of a directory (`commit::lock_dir`)
/// and returns its id for `unlockDirectory`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_lockDirectory<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    dir: JString<'l>,
) -> jni::sys::jlong {
    export(unowned, |env| {
        let dir = string_arg(env, &dir)?.unwrap_or_default();
        let file = commit::lock_dir(Path::new(&dir))?;
        let id = NEXT_LOCK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        LOCKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, file);
        Ok(id)
    })
}

/// `void unlockDirectory(long id)`: releases a lock taken by `lockDirectory`.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_unlockDirectory<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    id: jni::sys::jlong,
) {
    export(unowned, |_env| {
        LOCKS.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        Ok(())
    })
}

/// `String libraryVersion()`: the crate version, which the Java side checks against its own
/// before it uses the library.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeBridge_libraryVersion<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JString<'l> {
    export(unowned, |_env| Ok(env!("CARGO_PKG_VERSION").to_string()))
}
