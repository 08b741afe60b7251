package io.checkpointsurgeon.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP relay on 127.0.0.1 in front of a server (S3Proxy), counting the bytes each way: what a
 * client really fetched, headers and read-ahead included, whatever its own counters say.
 */
public final class CountingRelay implements AutoCloseable {
    private final ServerSocket server;
    private final int targetPort;
    private final AtomicLong fromServer = new AtomicLong();
    private final AtomicLong toServer = new AtomicLong();
    private final AtomicLong connections = new AtomicLong();

    private CountingRelay(int targetPort) throws IOException {
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.targetPort = targetPort;
        Thread accept = new Thread(this::accept, "relay-accept");
        accept.setDaemon(true);
        accept.start();
    }

    /** A relay to {@code 127.0.0.1:targetPort}. */
    public static CountingRelay to(int targetPort) throws IOException {
        return new CountingRelay(targetPort);
    }

    /** {@code http://127.0.0.1:<port>} of the relay. */
    public String endpoint() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    /** The bytes the server sent to clients. */
    public long bytesFromServer() {
        return fromServer.get();
    }

    /** The bytes clients sent to the server. */
    public long bytesToServer() {
        return toServer.get();
    }

    public long connections() {
        return connections.get();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket client = server.accept();
                Socket target = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                connections.incrementAndGet();
                pump(client, target, toServer);
                pump(target, client, fromServer);
            } catch (IOException e) {
                // closed, or the target refused: the client sees its connection end
            }
        }
    }

    private static void pump(Socket from, Socket to, AtomicLong counter) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[64 << 10];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                    counter.addAndGet(n);
                }
            } catch (IOException e) {
                // the other side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "relay-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
