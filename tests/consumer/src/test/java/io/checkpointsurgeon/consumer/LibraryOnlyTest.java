package io.checkpointsurgeon.consumer;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import io.checkpointsurgeon.CheckpointSurgeon;
import org.junit.Test;

/**
 * What a Maven user of io.checkpointsurgeon:checkpoint-surgeon gets is the library alone: its
 * classes and native library, no CLI and no picocli on the test class path (the POM declares no
 * dependency; the CLI is the artifact's {@code cli} classifier).
 */
public class LibraryOnlyTest {
    @Test
    public void theDependencyBringsNoPicocliAndNoCli() throws Exception {
        ClassLoader cl = LibraryOnlyTest.class.getClassLoader();
        assertEquals(CheckpointSurgeon.class, Class.forName("io.checkpointsurgeon.CheckpointSurgeon", false, cl));
        assertThrows(ClassNotFoundException.class, () -> Class.forName("picocli.CommandLine", false, cl));
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.checkpointsurgeon.cli.Cli", false, cl));
    }
}
