// A Spark SQL session served over a loopback socket, for tests/test_lance_spark.py.
//
// Run in Java's source-file mode on the classpath of jvm/lance-spark/pom.xml:
//   java -cp <classpath> LanceSparkSql.java PORT key=value...
// Every key=value becomes a Spark configuration entry (the Lance catalogs among them).
// Once the session is up it listens on 127.0.0.1:PORT; a client sends one JSON string
// (a SQL statement) per line and gets one JSON object per line back:
//   {"ok": true, "columns": [...], "rows": [{column: value, ...}, ...]}
//   {"ok": false, "error": "<class>: <message>", "causes": ["<class>: <message>", ...]}
// A statement starting with "NOOP " (benchmarks/spark_vs_lance_spark.py) runs the query after
// the prefix into Spark's noop sink, which materializes every row and column without
// collecting anything to the driver, and answers with no rows.
// Spark's own output goes to stderr; stdout carries nothing.
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class LanceSparkSql {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String NOOP = "NOOP ";

  public static void main(String[] args) throws Exception {
    System.setOut(System.err);
    int port = Integer.parseInt(args[0]);
    SparkSession.Builder builder = SparkSession.builder();
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      builder.config(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    SparkSession spark = builder.getOrCreate();
    try (ServerSocket server = new ServerSocket(port, 4, InetAddress.getLoopbackAddress())) {
      while (true) {
        try (Socket client = server.accept()) {
          serve(spark, client);
        }
      }
    }
  }

  private static void serve(SparkSession spark, Socket client) throws Exception {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
    PrintWriter out =
        new PrintWriter(new OutputStreamWriter(client.getOutputStream(), StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      out.println(JSON.writeValueAsString(run(spark, JSON.readValue(line, String.class))));
      out.flush();
    }
  }

  private static ObjectNode run(SparkSession spark, String statement) {
    ObjectNode answer = JSON.createObjectNode();
    try {
      if (statement.startsWith(NOOP)) {
        Dataset<Row> query = spark.sql(statement.substring(NOOP.length()));
        query.write().format("noop").mode("overwrite").save();
        answer.putArray("columns");
        answer.putArray("rows");
        answer.put("ok", true);
        return answer;
      }
      Dataset<Row> frame = spark.sql(statement);
      List<Row> rows = frame.collectAsList();
      ArrayNode columns = answer.putArray("columns");
      for (String column : frame.columns()) {
        columns.add(column);
      }
      ArrayNode values = answer.putArray("rows");
      for (Row row : rows) {
        values.add(JSON.readTree(row.json()));
      }
      answer.put("ok", true);
    } catch (Throwable failure) {
      answer.put("ok", false);
      answer.put("error", failure.getClass().getName() + ": " + failure.getMessage());
      ArrayNode causes = answer.putArray("causes");
      for (Throwable cause = failure.getCause(); cause != null; cause = cause.getCause()) {
        causes.add(cause.getClass().getName() + ": " + cause.getMessage());
      }
    }
    return answer;
  }
}
