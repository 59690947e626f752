// What pgjdbc learns of a statement before running it (Parse, Describe of
// the statement, Sync): its parameters' and its columns' types, through
// QueryFlux beside the same against PostgreSQL, which the caller compares.
// Run as a single-file program: java -cp postgresql.jar PgJdbcDescribe.java PORT.
// Expects the table qf_describe (id serial, n int, s text, at timestamptz).
import java.sql.*;

public class PgJdbcDescribe {
  static String described(Connection c, String sql) {
    try (var ps = c.prepareStatement(sql)) {
      var out = new StringBuilder();
      ParameterMetaData p = ps.getParameterMetaData();
      for (int i = 1; i <= p.getParameterCount(); ++i)
        out.append(" $").append(i).append(' ').append(p.getParameterTypeName(i));
      ResultSetMetaData r = ps.getMetaData();
      if (r == null)
        out.append(" | no columns");
      else
        for (int i = 1; i <= r.getColumnCount(); ++i)
          out.append(" | ").append(r.getColumnName(i)).append(' ').append(r.getColumnTypeName(i));
      return out.toString().trim();
    } catch (SQLException e) {
      return "error " + e.getSQLState();
    }
  }

  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&sslmode=disable";
    String[] statements = {
      "SELECT ?::int + 1 AS n, ? AS t, ? + 1.5 AS x",
      "SELECT id, at FROM qf_describe WHERE n = ? AND s LIKE ?",
      "INSERT INTO qf_describe (n, s) VALUES (?, ?) RETURNING id, s",
      "UPDATE qf_describe SET at = ? WHERE id = ?",
      "DELETE FROM qf_describe WHERE n > ?",
      "SELECT nope FROM qf_describe",
    };
    try (Connection c = DriverManager.getConnection(url)) {
      for (String sql : statements)
        System.out.println(described(c, sql));
      // In a transaction block the same; a statement that fails there
      // fails the block, as it does on PostgreSQL.
      c.setAutoCommit(false);
      try (var st = c.createStatement()) {
        st.executeQuery("SELECT 1"); // pgjdbc's BEGIN goes with the first statement run
      }
      System.out.println(described(c, statements[1]));
      System.out.println(described(c, statements[5]));
      try (var st = c.createStatement()) {
        st.executeQuery("SELECT 1");
        System.out.println("block usable");
      } catch (SQLException e) {
        System.out.println("block " + e.getSQLState());
      }
      c.rollback();
      // Parameters bound by the described types, run.
      c.setAutoCommit(true);
      try (var ps = c.prepareStatement("INSERT INTO qf_describe (n, s) VALUES (?, ?) RETURNING n + 1")) {
        ps.getParameterMetaData();
        ps.setObject(1, 41, Types.INTEGER);
        ps.setObject(2, "x", Types.VARCHAR);
        try (var rs = ps.executeQuery()) {
          rs.next();
          System.out.println("inserted " + rs.getObject(1) + " " + rs.getObject(1).getClass().getSimpleName());
        }
      }
    }
  }
}
