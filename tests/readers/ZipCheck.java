// ZipCheck reads a ZIP archive with the JDK's two ZIP APIs and prints, per
// API, one compact JSON line per entry, so s3zip's tests can compare what Java
// sees with what every other reader sees.
//
//   java tests/readers/ZipCheck.java [--api zipfile|zipinputstream|both] ARCHIVE
//
// Output lines (names escaped to ASCII JSON):
//   {"api":"zipfile","n":"a/b.txt","s":5,"d":false,"h":"<sha256 hex>"}
//   {"api":"zipfile","error":"..."}      the API threw; the exit status is 1
//   {"api":"zipfile","done":true,"count":N}
//
// ZipFile reads the central directory and then each entry (checking its CRC);
// ZipInputStream reads local headers front to back and rejects STORED entries
// whose sizes or CRC are only in a data descriptor, which is why s3zip never
// writes one. ZipInputStream verifies every entry's CRC32; ZipFile does not for
// STORED entries (JDK 17), so the caller must compare the SHA-256 printed here.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.*;
import java.util.zip.*;

public class ZipCheck {
    private static final byte[] BUF = new byte[1 << 20];

    public static void main(String[] args) throws Exception {
        String api = "both";
        String path = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--api") && i + 1 < args.length) {
                api = args[++i];
            } else {
                path = args[i];
            }
        }
        if (path == null || !(api.equals("both") || api.equals("zipfile") || api.equals("zipinputstream"))) {
            System.err.println("usage: java ZipCheck.java [--api zipfile|zipinputstream|both] ARCHIVE");
            System.exit(2);
        }
        final String archive = path;
        PrintStream out = new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false, StandardCharsets.US_ASCII);
        boolean ok = true;
        if (!api.equals("zipinputstream")) {
            ok &= run(out, "zipfile", () -> zipFile(out, archive));
        }
        if (!api.equals("zipfile")) {
            ok &= run(out, "zipinputstream", () -> zipInputStream(out, archive));
        }
        out.flush();
        System.exit(ok ? 0 : 1);
    }

    interface Reader { long read() throws Exception; }

    static boolean run(PrintStream out, String api, Reader r) {
        try {
            long n = r.read();
            out.println("{\"api\":\"" + api + "\",\"done\":true,\"count\":" + n + "}");
            return true;
        } catch (Throwable e) {
            out.println("{\"api\":\"" + api + "\",\"error\":" + json(e.toString()) + "}");
            return false;
        }
    }

    static long zipFile(PrintStream out, String path) throws Exception {
        long n = 0;
        try (ZipFile zf = new ZipFile(path, StandardCharsets.UTF_8)) {
            Enumeration<? extends ZipEntry> en = zf.entries();
            while (en.hasMoreElements()) {
                ZipEntry e = en.nextElement();
                try (InputStream in = zf.getInputStream(e)) {
                    emit(out, "zipfile", e, in);
                }
                n++;
            }
        }
        return n;
    }

    static long zipInputStream(PrintStream out, String path) throws Exception {
        long n = 0;
        try (ZipInputStream zin = new ZipInputStream(new BufferedInputStream(new FileInputStream(path), 1 << 16), StandardCharsets.UTF_8)) {
            ZipEntry e;
            while ((e = zin.getNextEntry()) != null) {
                emit(out, "zipinputstream", e, zin);
                n++;
            }
        }
        return n;
    }

    static void emit(PrintStream out, String api, ZipEntry e, InputStream in) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        long size = 0;
        int k;
        while ((k = in.read(BUF)) > 0) {
            md.update(BUF, 0, k);
            size += k;
        }
        out.println("{\"api\":\"" + api + "\",\"n\":" + json(e.getName()) + ",\"s\":" + size
                + ",\"d\":" + e.isDirectory() + ",\"h\":\"" + HexFormat.of().formatHex(md.digest()) + "\"}");
    }

    static String json(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
