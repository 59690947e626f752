// pgjdbc's executeBatch in autocommit through QueryFlux: one batch before
// one Sync, which PostgreSQL runs as one transaction. Run as a single-file
// program: java -cp postgresql.jar PgJdbcBatch.java PORT. Prints the rows
// left after a batch that fails and after one that succeeds.
import java.sql.*;

public class PgJdbcBatch {
  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&sslmode=disable";
    try (Connection c = DriverManager.getConnection(url); Statement st = c.createStatement()) {
      st.execute("DROP TABLE IF EXISTS qf_batch; CREATE TABLE qf_batch (id int PRIMARY KEY)");
      for (int[] ids : new int[][]{{1, 2, 1, 3}, {4, 5, 6}}) {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO qf_batch VALUES (?)")) {
          for (int id : ids) {
            ps.setInt(1, id);
            ps.addBatch();
          }
          ps.executeBatch();
          System.out.print("ok ");
        } catch (BatchUpdateException e) {
          System.out.print(e.getSQLState() + " ");
        }
        try (ResultSet rs = st.executeQuery("SELECT count(*) FROM qf_batch")) {
          rs.next();
          System.out.println(rs.getInt(1));
        }
      }
      st.execute("DROP TABLE qf_batch");
    }
  }
}
