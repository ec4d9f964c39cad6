import java.sql.*;
public class Client {
    public static void main(String[] a) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + a[0] + "/dpsql?sslmode=require";
        try (Connection c = DriverManager.getConnection(url, "alice", a[1])) {
            try (ResultSet r = c.getMetaData().getTables(null, "PUMS", "%", null)) {
                while (r.next()) System.out.println("table " + r.getString("TABLE_SCHEM") + "." + r.getString("TABLE_NAME"));
            }
            try (Statement s = c.createStatement()) { s.execute("SET dpsql.epsilon = 0.1"); }
            try (PreparedStatement p = c.prepareStatement("SELECT COUNT(*) AS n FROM PUMS.PUMS WHERE age > ?")) {
                p.setInt(1, 40);
                try (ResultSet r = p.executeQuery()) { while (r.next()) System.out.println("count " + r.getLong(1)); }
            }
            try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SHOW dpsql.spent")) {
                while (r.next()) System.out.println("spent " + r.getString(1));
            }
        }
    }
}
