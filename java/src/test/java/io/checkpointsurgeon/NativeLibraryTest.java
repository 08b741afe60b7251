package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.Test;

/**
 * The jar ships a native library for linux-x86_64 and linux-aarch64, and neither needs a glibc
 * symbol newer than 2.17 (read from the dynamic symbol table with binutils' objdump), so the jar
 * loads on Debian 9+, Ubuntu 14.04+, RHEL/CentOS 7+ and Amazon Linux 2; neither exports a test-only
 * native.
 */
public class NativeLibraryTest {
    @Test
    public void bothLibrariesNeedNoGlibcNewerThan217() throws Exception {
        Path jar = Path.of(System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar"));
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            for (String platform : List.of("linux-x86_64", "linux-aarch64")) {
                ZipEntry e = zip.getEntry("native/" + platform + "/libcheckpoint_surgeon.so");
                assertTrue(platform + " library in " + jar, e != null);
                Path lib = Files.createTempFile("cs-" + platform, ".so");
                try (InputStream in = zip.getInputStream(e)) {
                    Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
                }
                Process p = new ProcessBuilder("objdump", "-T", lib.toString()).redirectErrorStream(true).start();
                String symbols = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertEquals(symbols, 0, p.waitFor());
                assertTrue(platform + ": " + symbols, symbols.contains("Java_io_checkpointsurgeon_internal_NativeBridge_plan"));
                // the test-only exports (NativeTesting: a deliberate panic, wire echo) are a library of their own
                assertFalse(platform + " ships test-only exports: " + symbols, symbols.contains("NativeTesting"));
                List<String> newer = new ArrayList<>();
                int[] max = {0, 0};
                Matcher m = Pattern.compile("GLIBC_(\\d+)\\.(\\d+)").matcher(symbols);
                while (m.find()) {
                    int major = Integer.parseInt(m.group(1)), minor = Integer.parseInt(m.group(2));
                    if (major > 2 || (major == 2 && minor > 17)) newer.add(m.group());
                    if (major > max[0] || (major == max[0] && minor > max[1])) max = new int[] {major, minor};
                }
                System.out.printf("%s: newest glibc symbol version GLIBC_%d.%d%n", platform, max[0], max[1]);
                assertEquals(platform + " needs glibc symbols newer than 2.17", List.of(), newer);
            }
        }
    }

    /**
     * The tests' own library (NativeTesting's natives) exports those only: were it to export the
     * production exports it links in, the JVM could bind a NativeBridge native to its copy, whose
     * state (directory locks, cached classes) is not the production library's.
     */
    @Test
    public void theTestLibraryExportsOnlyTheTestNatives() throws Exception {
        String lib = System.getProperty("checkpointsurgeon.testing.library");
        assertTrue("no -Dcheckpointsurgeon.testing.library", lib != null);
        Process p = new ProcessBuilder("objdump", "-T", lib).redirectErrorStream(true).start();
        String symbols = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(symbols, 0, p.waitFor());
        assertTrue(symbols, symbols.contains("Java_io_checkpointsurgeon_internal_NativeTesting_wireEcho"));
        assertFalse(symbols, symbols.contains("NativeBridge"));
    }

    /** Every class of the library and CLI is Java 11 bytecode (class file major version 55 or less). */
    @Test
    public void everyMainClassRunsOnJava11() throws Exception {
        Path jar = Path.of(System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar"));
        int classes = 0;
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            for (ZipEntry e : java.util.Collections.list(zip.entries())) {
                if (!e.getName().startsWith("io/checkpointsurgeon/") || !e.getName().endsWith(".class")) continue;
                try (InputStream in = zip.getInputStream(e)) {
                    byte[] head = in.readNBytes(8);
                    int major = ((head[6] & 0xff) << 8) | (head[7] & 0xff);
                    assertTrue(e.getName() + " has class file version " + major, major <= 55);
                    classes++;
                }
            }
        }
        assertTrue(classes > 20);
    }
}
