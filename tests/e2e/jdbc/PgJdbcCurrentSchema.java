// pgjdbc's currentSchema (a search_path startup parameter) through
// QueryFlux. Run as a single-file program: java -cp postgresql.jar
// PgJdbcCurrentSchema.java PORT. Prints the schema the server used.
import java.sql.*;

public class PgJdbcCurrentSchema {
  public static void main(String[] args) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0]
                 + "/postgres?user=postgres&sslmode=disable&currentSchema=qf_even";
    try (Connection c = DriverManager.getConnection(url);
         Statement st = c.createStatement();
         ResultSet rs = st.executeQuery("SELECT current_schema()")) {
      rs.next();
      System.out.println(rs.getString(1));
    }
  }
}
