package io.checkpointsurgeon;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Function;

/**
 * The text of an exception or a finding: fragments of text and the {@link Choice}s it names, so
 * that each front end names a choice its own way ({@link #render}). {@link #toString()} names
 * them as the Java API does. Immutable.
 */
public final class Message implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Each a String or a Choice. */
    private final List<Object> parts;

    private Message(List<Object> parts) {
        this.parts = Collections.unmodifiableList(parts);
    }

    /** A message of text, {@link Choice}s and messages, in order; anything else as {@link String#valueOf}. */
    public static Message of(Object... parts) {
        List<Object> out = new ArrayList<>();
        for (Object p : parts) add(out, p);
        return new Message(out);
    }

    /** This message followed by {@code more} (as {@link #of}). */
    public Message plus(Object... more) {
        List<Object> out = new ArrayList<>(parts);
        for (Object p : more) add(out, p);
        return new Message(out);
    }

    /** The message of {@code e}: its typed form if it is a {@link CheckpointSurgeonException}, else its text. */
    public static Message of(Throwable e) {
        return e instanceof CheckpointSurgeonException ? ((CheckpointSurgeonException) e).typedMessage()
                : of(String.valueOf(e.getMessage()));
    }

    /** {@code parts} joined by {@code separator}. */
    public static Message join(String separator, List<Message> parts) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) add(out, separator);
            add(out, parts.get(i));
        }
        return new Message(out);
    }

    private static void add(List<Object> out, Object p) {
        if (p instanceof Message) {
            for (Object q : ((Message) p).parts) add(out, q);
        } else if (p instanceof Choice) {
            out.add(p);
        } else {
            String s = String.valueOf(p);
            if (s.isEmpty()) return;
            int last = out.size() - 1;
            // adjacent text as one fragment, so equal texts are equal messages
            if (last >= 0 && out.get(last) instanceof String) out.set(last, out.get(last) + s);
            else out.add(s);
        }
    }

    /** The text, each choice named by {@code spelling}. */
    public String render(Function<Choice, String> spelling) {
        StringBuilder b = new StringBuilder();
        for (Object p : parts) b.append(p instanceof Choice ? spelling.apply((Choice) p) : (String) p);
        return b.toString();
    }

    /** The choices this message names, in order. */
    public List<Choice> choices() {
        List<Choice> out = new ArrayList<>();
        for (Object p : parts) if (p instanceof Choice) out.add((Choice) p);
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Message && parts.equals(((Message) o).parts);
    }

    @Override
    public int hashCode() {
        return parts.hashCode();
    }

    /** The text with each choice named as the Java API does ({@link Choice#toString()}). */
    @Override
    public String toString() {
        return render(Choice::toString);
    }
}
