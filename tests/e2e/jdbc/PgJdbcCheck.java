// pgjdbc (Debian's libpostgresql-jdbc-java) through QueryFlux's PostgreSQL
// frontend. Run as a single-file program: java -cp postgresql.jar PgJdbcCheck.java PORT
// Prints one line per check; the e2e test compares them.
import java.math.BigDecimal;
import java.sql.*;

public class PgJdbcCheck {
  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&sslmode=disable";
    try (Connection c = DriverManager.getConnection(url)) {
      // Metadata of a prepared statement before it runs: Describe (statement).
      try (PreparedStatement ps = c.prepareStatement("SELECT id, name, price FROM qf_e2e WHERE id = ?")) {
        ResultSetMetaData md = ps.getMetaData();
        StringBuilder cols = new StringBuilder("metadata");
        for (int i = 1; i <= md.getColumnCount(); i++)
          cols.append(' ').append(md.getColumnName(i)).append(':').append(md.getColumnTypeName(i));
        System.out.println(cols);
        // Past prepareThreshold (5) pgjdbc switches to a named server-side statement.
        int found = 0;
        for (int i = 0; i < 8; i++) {
          ps.setInt(1, 1);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
              BigDecimal price = rs.getBigDecimal("price");
              if (rs.getString("name").equals("ünï") && price.compareTo(new BigDecimal("2.50")) == 0)
                found++;
            }
          }
        }
        System.out.println("prepared " + found);
      }
      // A fetch size inside a transaction reads through a portal, 50 rows per Execute.
      c.setAutoCommit(false);
      try (Statement st = c.createStatement()) {
        st.setFetchSize(50);
        long sum = 0;
        int n = 0;
        try (ResultSet rs = st.executeQuery("SELECT g FROM generate_series(1, 1000) g")) {
          while (rs.next()) {
            sum += rs.getLong(1);
            n++;
          }
        }
        System.out.println("fetched " + n + " " + sum);
      }
      c.commit();
      c.setAutoCommit(true);
      try (Statement st = c.createStatement()) {
        st.executeQuery("SELECT * FROM no_such_table");
      } catch (SQLException e) {
        System.out.println("error " + e.getSQLState());
      }
      try (Statement st = c.createStatement();
           ResultSet rs = st.executeQuery("SELECT at FROM qf_e2e WHERE id = 1")) {
        rs.next();
        System.out.println("timestamptz " + rs.getTimestamp(1).toInstant());
      }
    }
  }
}
