package io.checkpointsurgeon.flink;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InvalidClassException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.After;
import org.junit.Test;

/**
 * The allow-list of {@link SerialFilter} cannot be switched off from outside the JVM's code: with
 * the system property that once put it into recording mode set, a class outside the list is still
 * refused before its {@code readObject} runs, and nothing is recorded. (Recording is the tests'
 * agent, {@code SerialClassRecorder}, through a package-private seam.)
 */
public class SerialFilterNoSwitchTest {
    /** The property of 0.2.0 up to 6bc834c, which made the filter allow every class. */
    private static final String OLD_RECORD_PROPERTY = "checkpointsurgeon.serialFilter.record";

    static volatile boolean markerRan;

    /** A class no CompletedCheckpoint holds, whose readObject would show that it ran. */
    static final class Marker implements Serializable {
        private static final long serialVersionUID = 1L;

        private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
            in.defaultReadObject();
            markerRan = true;
        }
    }

    @After
    public void clearProperty() {
        System.clearProperty(OLD_RECORD_PROPERTY);
    }

    @Test
    public void recordPropertyDoesNotOpenTheFilter() throws Exception {
        Path dir = Files.createTempDirectory("serial-filter");
        Path record = dir.resolve("record.txt");
        System.setProperty(OLD_RECORD_PROPERTY, record.toString());
        List<Object> graph = new ArrayList<>();
        graph.add(new Marker());
        byte[] bytes = serialize(graph);
        SerialFilter filter = new SerialFilter("hostile.bin", bytes.length);
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            in.setObjectInputFilter(filter);
            in.readObject();
            fail("the filter let " + Marker.class.getName() + " through");
        } catch (InvalidClassException expected) {
            // refused
        } finally {
            boolean recorded = Files.deleteIfExists(record);
            Files.delete(dir);
            assertFalse("the filter recorded classes into " + record, recorded);
        }
        assertFalse("Marker.readObject ran", markerRan);
        assertTrue(filter.refusal(), filter.refusal().contains(Marker.class.getName())
                && filter.refusal().contains("not in the allow-list"));
    }

    /** The control: the same filter and property let a graph of allow-listed classes through. */
    @Test
    public void allowListedClassesPass() throws Exception {
        Path record = Files.createTempFile("serial-filter", ".txt");
        Files.delete(record);
        System.setProperty(OLD_RECORD_PROPERTY, record.toString());
        List<Object> graph = new ArrayList<>();
        graph.add(42L);
        byte[] bytes = serialize(graph);
        SerialFilter filter = new SerialFilter("plain.bin", bytes.length);
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            in.setObjectInputFilter(filter);
            assertEquals(graph, in.readObject());
        } finally {
            assertFalse("the filter recorded classes into " + record, Files.deleteIfExists(record));
        }
        assertNull(filter.refusal());
    }

    private static byte[] serialize(Object o) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(b)) {
            out.writeObject(o);
        }
        return b.toByteArray();
    }
}
