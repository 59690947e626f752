// pgjdbc reads a result in chunks (setFetchSize, in a transaction: a
// portal executed with a row limit) and runs another statement between
// the chunks; then reads two such results in turn. Run as a single-file program:
// java -cp postgresql.jar PgJdbcFetchInterleaved.java PORT. Prints the
// values read and the rows written, or the SQLSTATE that stopped it.
import java.sql.*;

public class PgJdbcFetchInterleaved {
  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&sslmode=disable";
    try (Connection c = DriverManager.getConnection(url)) {
      try (var st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS qf_fetched; CREATE TABLE qf_fetched (g int)");
      }
      c.setAutoCommit(false);
      var read = new StringBuilder();
      try (var chunks = c.createStatement();
           var insert = c.prepareStatement("INSERT INTO qf_fetched VALUES (?)")) {
        chunks.setFetchSize(3);
        try (ResultSet rs = chunks.executeQuery("SELECT g FROM generate_series(1, 10) g")) {
          for (int guard = 0; rs.next() && guard < 30; ++guard) {
            read.append(rs.getInt(1)).append(' ');
            insert.setInt(1, rs.getInt(1));
            insert.executeUpdate();
          }
        }
        c.commit();
        System.out.println("read " + read.toString().trim());
      } catch (SQLException e) {
        c.rollback();
        System.out.println("read " + read.toString().trim() + " then " + e.getSQLState());
      }
      c.setAutoCommit(true);
      try (var st = c.createStatement(); var rs = st.executeQuery("SELECT count(*) FROM qf_fetched")) {
        rs.next();
        System.out.println("written " + rs.getInt(1));
      }
      // Two results read in chunks, in turn.
      c.setAutoCommit(false);
      var turns = new StringBuilder();
      try (var a = c.createStatement(); var b = c.createStatement()) {
        a.setFetchSize(2);
        b.setFetchSize(2);
        try (ResultSet ra = a.executeQuery("SELECT g FROM generate_series(1, 5) g");
             ResultSet rb = b.executeQuery("SELECT g * 100 FROM generate_series(1, 3) g")) {
          boolean moreA = true;
          boolean moreB = true;
          for (int guard = 0; (moreA || moreB) && guard < 30; ++guard) {
            if (moreA && (moreA = ra.next()))
              turns.append(ra.getInt(1)).append(' ');
            if (moreB && (moreB = rb.next()))
              turns.append(rb.getInt(1)).append(' ');
          }
        }
        System.out.println("in turn " + turns.toString().trim());
      } catch (SQLException e) {
        System.out.println("in turn " + turns.toString().trim() + " then " + e.getSQLState());
      }
      c.rollback();
    }
  }
}
