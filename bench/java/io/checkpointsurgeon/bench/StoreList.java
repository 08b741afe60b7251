package io.checkpointsurgeon.bench;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.flink.FlinkFileSystems;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The S3 side of bench/orphans.sh: the upload of its generated tree, and the two plain listings
 * {@code orphans} is measured against.
 *
 * <pre>
 * StoreList upload ENDPOINT BUCKET PREFIX LOCAL_DIR THREADS  copies a tree below the prefix, plain HTTP PUTs, THREADS at once
 * StoreList flink-list ROOT CONF PLUGINS                   Flink's FileSystem.listStatus, directory by directory, one thread
 * StoreList s3-list ENDPOINT BUCKET PREFIX                 one flat ListObjectsV2 of the prefix (pages of 1,000), plain HTTP
 * (plain HTTP: S3Proxy's authorization=none; the S3A client costs ~8 ms of CPU per small file)
 * </pre>
 */
public final class StoreList {
    private static final Pattern KEY = Pattern.compile("<Key>");
    private static final Pattern TOKEN = Pattern.compile("<NextContinuationToken>([^<]*)</NextContinuationToken>");

    private StoreList() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "upload":
                System.out.println("uploaded files=" + upload(args[1], args[2], args[3], Paths.get(args[4]),
                        Integer.parseInt(args[5])));
                break;
            case "flink-list":
                CheckpointSurgeon.configureFileSystems(Paths.get(args[2]), Paths.get(args[3]));
                long[] n = new long[2];
                flinkList(args[1], n);
                System.out.println("files=" + n[0] + " directories=" + n[1]);
                break;
            case "s3-list":
                System.out.println("objects=" + s3List(args[1], args[2], args[3]));
                break;
            default:
                throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    private static long upload(String endpoint, String bucket, String prefix, Path local, int threads) throws Exception {
        List<Path> files = new ArrayList<>();
        try (java.util.stream.Stream<Path> s = Files.walk(local)) {
            s.filter(Files::isRegularFile).forEach(files::add);
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Integer>> done = new ArrayList<>();
            for (Path f : files) {
                String key = prefix + "/" + local.relativize(f).toString().replace('\\', '/');
                done.add(pool.submit(() -> put(endpoint + "/" + bucket + "/" + key, Files.readAllBytes(f))));
            }
            for (Future<Integer> d : done) {
                if (d.get() != 200) throw new IllegalStateException("PUT: HTTP " + d.get());
            }
        } finally {
            pool.shutdownNow();
        }
        return files.size();
    }

    private static int put(String url, byte[] body) throws Exception {
        HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
        c.setRequestMethod("PUT");
        c.setDoOutput(true);
        c.setFixedLengthStreamingMode(body.length);
        try (java.io.OutputStream out = c.getOutputStream()) {
            out.write(body);
        }
        int code = c.getResponseCode();
        c.getInputStream().close();
        return code;
    }

    private static void flinkList(String dir, long[] n) throws Exception {
        n[1]++;
        for (FlinkFileSystems.Status s : FlinkFileSystems.listStatus(dir)) {
            if (s.dir) flinkList(s.path, n);
            else n[0]++;
        }
    }

    private static long s3List(String endpoint, String bucket, String prefix) throws Exception {
        long objects = 0;
        String token = null;
        do {
            String url = endpoint + "/" + bucket + "?list-type=2&max-keys=1000&prefix=" + enc(prefix)
                    + (token == null ? "" : "&continuation-token=" + enc(token));
            HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
            if (c.getResponseCode() != 200) throw new IllegalStateException(url + ": HTTP " + c.getResponseCode());
            String body;
            try (InputStream in = c.getInputStream()) {
                body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            Matcher k = KEY.matcher(body);
            while (k.find()) objects++;
            Matcher t = TOKEN.matcher(body);
            token = t.find() ? t.group(1) : null;
        } while (token != null);
        return objects;
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
