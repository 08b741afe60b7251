import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.xerial.snappy.SnappyFramedInputStream;

/**
 * xerial's own judgement of the snappy frames a keyed rewrite writes: each {@code NAME.sz} in the
 * case directories (written by {@code native/tests/keyed_surgery.rs}, test
 * {@code snappy_frames_for_the_judge}) is the compressed part of one key group of a rewritten
 * stream, from its offset to the next (for a heap checkpoint, after the key group's id: one
 * framed stream per state, read as one, as {@code HeapRestoreOperation} reads them), and
 * {@code NAME.raw} the bytes the tool's own reading of the same frames gives. Flink reads them with
 * {@code SnappyFramedInputStream(in, false)}; this judge also checks every chunk's checksum.
 *
 * <p>Run by {@code tests/judges/run.sh}: {@code java -cp snappy-java.jar SnappyJudge.java DIR...}.
 */
public class SnappyJudge {

    public static void main(String[] args) throws Exception {
        int files = 0;
        int failed = 0;
        for (String a : args) {
            List<Path> parts;
            try (Stream<Path> s = Files.list(Paths.get(a))) {
                parts = s.filter(p -> p.toString().endsWith(".sz")).sorted().collect(Collectors.toList());
            }
            long bytes = 0;
            for (Path sz : parts) {
                files++;
                Path raw = Paths.get(sz.toString().replaceAll("\\.sz$", ".raw"));
                byte[] expected = Files.readAllBytes(raw);
                byte[] read;
                try (InputStream in = new SnappyFramedInputStream(Files.newInputStream(sz), true)) {
                    ByteArrayOutputStream out = new ByteArrayOutputStream();
                    in.transferTo(out);
                    read = out.toByteArray();
                }
                if (!Arrays.equals(read, expected)) {
                    failed++;
                    System.out.println("FAIL " + sz + ": xerial reads " + read.length + " bytes, the tool "
                            + expected.length);
                }
                bytes += read.length;
            }
            System.out.println("ok   " + Paths.get(a).getFileName() + ": " + parts.size() + " key groups, "
                    + bytes + " bytes as the tool reads them");
        }
        System.out.println((files - failed) + " of " + files + " framed key groups read alike");
        System.exit(failed == 0 && files > 0 ? 0 : 1);
    }
}
