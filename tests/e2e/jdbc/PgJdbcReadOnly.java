// pgjdbc's read-only transaction (setReadOnly(true), autocommit off: it
// sends BEGIN READ ONLY in one batch with the first query), then a write
// in it. Run as a single-file program: java -cp postgresql.jar
// PgJdbcReadOnly.java PORT. Prints what the block says of itself and how
// the write ended.
import java.sql.*;

public class PgJdbcReadOnly {
  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&sslmode=disable";
    try (Connection c = DriverManager.getConnection(url)) {
      try (var st = c.createStatement()) {
        st.execute("CREATE TABLE IF NOT EXISTS qf_read_only (v int)");
      }
      c.setReadOnly(true);
      c.setAutoCommit(false);
      try (var st = c.createStatement()) {
        try (var rs = st.executeQuery("SHOW transaction_read_only")) {
          rs.next();
          System.out.println("transaction_read_only " + rs.getString(1));
        }
        try {
          st.executeUpdate("INSERT INTO qf_read_only VALUES (1)");
          System.out.println("written");
        } catch (SQLException e) {
          System.out.println("refused " + e.getSQLState());
        }
      }
      c.rollback();
    }
  }
}
