package io.checkpointsurgeon.cli;

import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.LibraryLayeringTest;
import java.util.regex.Pattern;
import org.junit.Test;

/**
 * The CLI names every {@link Choice} by one of its own options or commands: the very spellings
 * that {@link LibraryLayeringTest} refuses in a library literal.
 */
public class CliSpellingTest {
    @Test
    public void everyChoiceIsACliOptionOrCommand() throws Exception {
        Pattern cli = LibraryLayeringTest.cliCommandOrOption();
        for (Choice c : Choice.values()) {
            String spelled = CliSpelling.of(c);
            assertTrue(c + " as " + spelled, cli.matcher(spelled).find());
            assertTrue(c + ": the library's name is not the CLI's", !cli.matcher(c.toString()).find());
        }
    }
}
