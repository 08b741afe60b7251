package io.checkpointsurgeon.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.CheckpointSurgeonTest;
import org.junit.Test;

/** The JNI boundary: a Rust panic arrives as a CheckpointSurgeonException, never as a JVM crash. */
public class NativeBridgeTest {
    @Test
    public void aRustPanicBecomesAnExceptionAndTheJvmCarriesOn() throws Exception {
        for (int i = 0; i < 3; i++) {
            try {
                NativeTesting.panicForTesting();
                fail("expected the panic as an exception");
            } catch (CheckpointSurgeonException e) {
                assertEquals("PANIC", e.code().name());
                assertTrue(e.getMessage().contains("deliberate panic"));
            }
        }
        assertFalse(CheckpointSurgeon.inspect(CheckpointSurgeonTest.fixture("stale-union")).operators().isEmpty());
    }
}
