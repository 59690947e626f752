// pgjdbc connections that each set their own session defaults, as a pool
// such as HikariCP does on every connection it opens (transactionIsolation,
// schema), all open at once through QueryFlux. Run as a single-file
// program: java -cp postgresql.jar PgJdbcSessions.java PORT CONNECTIONS
// Prints one line per connection: its isolation level and schema as the
// server saw them while the others were open.
import java.sql.*;
import java.util.ArrayList;
import java.util.List;

public class PgJdbcSessions {
  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&sslmode=disable";
    int n = Integer.parseInt(args[1]);
    List<Connection> open = new ArrayList<>();
    try {
      for (int i = 0; i < n; i++) {
        Connection c = DriverManager.getConnection(url);
        c.setTransactionIsolation(i % 2 == 0 ? Connection.TRANSACTION_SERIALIZABLE
                                             : Connection.TRANSACTION_REPEATABLE_READ);
        c.setSchema(i % 2 == 0 ? "qf_even" : "qf_odd");
        open.add(c);
      }
      for (int round = 0; round < 2; round++)
        for (int i = 0; i < n; i++)
          try (Statement st = open.get(i).createStatement();
               ResultSet rs = st.executeQuery(
                 "SELECT current_setting('transaction_isolation'), current_schema()")) {
            rs.next();
            if (round == 1)
              System.out.println(i + " " + rs.getString(1) + " " + rs.getString(2));
          }
    } finally {
      for (Connection c : open)
        c.close();
    }
  }
}
