package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.List;
import org.junit.Test;

/**
 * A message names the caller's choices as {@link Choice}s: {@code toString()} as the Java API does,
 * {@link Message#render} as a front end does; an exception and a finding carry it typed.
 */
public class MessageTest {
    private static final Message REFUSED = Message.of("the output x is the checkpoint itself; use ", Choice.IN_PLACE,
            " to repair it where it is");

    @Test
    public void rendersEachChoiceWithTheGivenSpelling() {
        assertEquals("the output x is the checkpoint itself; use CheckpointSurgeon.applyInPlace to repair it where it is",
                REFUSED.toString());
        assertEquals("the output x is the checkpoint itself; use <IN_PLACE> to repair it where it is",
                REFUSED.render(c -> "<" + c.name() + ">"));
        assertEquals(List.of(Choice.IN_PLACE), REFUSED.choices());
    }

    @Test
    public void equalTextAndChoicesAreEqualMessages() {
        assertEquals(REFUSED, Message.of("the output x ", Message.of("is the checkpoint itself; use "), Choice.IN_PLACE,
                " to repair", "", " it where it is"));
        assertEquals(REFUSED.hashCode(), Message.of("the output x is the checkpoint itself; use ", Choice.IN_PLACE,
                " to repair it where it is").hashCode());
        // the same text, once as a choice and once as its spelling, are two messages
        assertNotEquals(REFUSED, Message.of(REFUSED.toString()));
        assertEquals(Message.of("a; ", Choice.OUTPUT, "; b"), Message.join("; ", List.of(Message.of("a"),
                Message.of(Choice.OUTPUT), Message.of("b"))));
    }

    @Test
    public void anExceptionKeepsItsMessageTypedThroughWrappingAndSerialization() throws Exception {
        CheckpointSurgeonException e = new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT,
                REFUSED);
        assertEquals(REFUSED.toString(), e.getMessage());
        CheckpointSurgeonException wrapped = new CheckpointSurgeonException(e.code(),
                Message.of(e).plus("; nothing was changed"), e);
        assertEquals(REFUSED.plus("; nothing was changed"), wrapped.typedMessage());
        // a task's exception reaches a Flink client serialized
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(wrapped);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            assertEquals(wrapped.typedMessage(), ((CheckpointSurgeonException) in.readObject()).typedMessage());
        }
        // a plain text message is one fragment
        assertEquals(List.of(), new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "x").typedMessage()
                .choices());
    }

    @Test
    public void aFindingRendersItsMessageWithTheJavaApiNames() {
        CheckpointSurgeon.Finding f = new CheckpointSurgeon.Finding(CheckpointSurgeon.Finding.Severity.WARNING,
                CheckpointSurgeon.Finding.Code.STALE_KEYED_STATE,
                Message.of("follow it with ", Choice.KEYED_HISTORY), null, List.of());
        assertEquals("follow it with CheckpointSurgeon.inspectKeyed of each checkpoint", f.message());
        assertEquals(List.of(Choice.KEYED_HISTORY), f.typedMessage().choices());
    }
}
