import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * One NameNode and one DataNode in this JVM (Hadoop's MiniDFSCluster) on fixed loopback ports,
 * WebHDFS on, permissions off. Arguments: base dir, NameNode RPC port, NameNode HTTP port.
 * Prints "KOPYCAT-HDFS-READY" once the cluster is active, then runs until it is stopped.
 */
public final class KopycatMiniHdfs {
    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
        conf.setBoolean("dfs.webhdfs.enabled", true);
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.datanode.hostname", "127.0.0.1");
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
            .nameNodePort(Integer.parseInt(args[1]))
            .nameNodeHttpPort(Integer.parseInt(args[2]))
            .numDataNodes(1)
            .format(true)
            .build();
        cluster.waitActive();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
        System.out.println("KOPYCAT-HDFS-READY");
        System.out.flush();
        Thread.currentThread().join();
    }
}
