// pgjdbc's typed and binary parameters through QueryFlux, beside the same
// against PostgreSQL: the caller compares the two outputs. Run as a
// single-file program: java -cp postgresql.jar PgJdbcParameters.java PORT.
// Prints one line per case, its value and Java class or its SQLSTATE.
import java.sql.*;
import java.time.LocalDate;

public class PgJdbcParameters {
  interface Case {
    Object run(Connection c) throws SQLException;
  }

  static Object one(PreparedStatement ps) throws SQLException {
    try (ResultSet rs = ps.executeQuery()) {
      rs.next();
      Object v = rs.getObject(1);
      return v instanceof byte[] b ? java.util.HexFormat.of().formatHex(b) : v;
    }
  }

  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&sslmode=disable";
    Case[] cases = {
      c -> { var ps = c.prepareStatement("SELECT ? + ?"); ps.setInt(1, 2); ps.setInt(2, 3); return one(ps); },
      c -> { var ps = c.prepareStatement("SELECT ?"); ps.setLong(1, 1L << 40); return one(ps); },
      c -> { var ps = c.prepareStatement("SELECT ? IS NULL"); ps.setNull(1, Types.VARCHAR); return one(ps); },
      c -> { var ps = c.prepareStatement("SELECT ? + 1"); ps.setObject(1, LocalDate.of(2020, 1, 1)); return one(ps); },
      c -> { var ps = c.prepareStatement("SELECT ?"); ps.setArray(1, c.createArrayOf("int4", new Integer[]{1, null, 3})); return one(ps).toString(); },
      c -> { var ps = c.prepareStatement("SELECT ?"); ps.setArray(1, c.createArrayOf("text", new String[]{"a\"b", "c,d"})); return one(ps).toString(); },
      c -> { var ps = c.prepareStatement("SELECT ?"); ps.setBytes(1, new byte[]{0, 1, -1, '\\'}); return one(ps); },
      c -> { var cs = c.prepareCall("{? = call upper(?)}"); cs.registerOutParameter(1, Types.VARCHAR); cs.setString(2, "abc"); cs.execute(); return cs.getString(1); },
    };
    try (Connection c = DriverManager.getConnection(url)) {
      for (int i = 0; i < cases.length; ++i) {
        // Past prepareThreshold (5) too: the same statements, prepared on the server.
        for (int round = 0; round < 6; ++round) {
          Object v;
          try {
            v = cases[i].run(c);
            v = v + " " + v.getClass().getSimpleName();
          } catch (SQLException e) {
            v = e.getSQLState();
          }
          if (round == 0 || round == 5)
            System.out.println(i + " " + v);
        }
      }
    }
  }
}
