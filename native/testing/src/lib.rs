//! The test-only exports: the natives of `io.checkpointsurgeon.internal.NativeTesting`, a class of
//! the Java test source set, in a library of their own that the tests load beside the jar's, so the
//! shipped library has none (no `panicForTesting` in production). Each runs the production export
//! frame (`checkpoint_surgeon::bridge::export`) around the crate's own code.

use checkpoint_surgeon::bridge::{bytes_arg, export, string_arg, Result};
use checkpoint_surgeon::{wire, Code};
use jni::objects::{JByteArray, JClass, JString};
use jni::EnvUnowned;

/// `byte[] wireEcho(byte[] payload)`: decodes any wire payload and encodes it again (tests).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeTesting_wireEcho<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    payload: JByteArray<'l>,
) -> JByteArray<'l> {
    export(unowned, |env| Ok(wire::echo(bytes_arg(env, &payload)?)?))
}

/// `byte[] wireSample(String name)`: a payload built from known values (`wire::samples`), for
/// the Java test that decodes it field by field.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeTesting_wireSample<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
) -> JByteArray<'l> {
    export(unowned, |env| {
        Ok(wire::samples::encode(
            &string_arg(env, &name)?.unwrap_or_default(),
        )?)
    })
}

/// `String wireCheck(String name, byte[] payload)`: decodes a request or source Java built and
/// compares it field by field with sample `name`; empty when they agree, else what differs.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeTesting_wireCheck<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    name: JString<'l>,
    payload: JByteArray<'l>,
) -> JString<'l> {
    export(unowned, |env| {
        let name = string_arg(env, &name)?.unwrap_or_default();
        Ok(wire::samples::check(&name, bytes_arg(env, &payload)?)?)
    })
}

/// `String errorCodes()`: the names of [`Code::ALL`], one per line (the Java enum must match).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeTesting_errorCodes<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JString<'l> {
    export(unowned, |_env| {
        let names: Vec<&str> = Code::ALL.iter().map(|c| c.name()).collect();
        Ok(names.join("\n"))
    })
}

/// `void panicForTesting()`: proves that a Rust panic reaches Java as an exception.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_checkpointsurgeon_internal_NativeTesting_panicForTesting<'l>(
    unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
) {
    export(unowned, |_env| -> Result<()> {
        panic!("deliberate panic to test the JNI boundary")
    })
}
